package main

// "dflockd health": asks a running server whether it answers, for a
// container's HEALTHCHECK (which runs it in the image, where there is no
// shell, nc or curl) or an operator's script. It reads the server's own
// variables (DFLOCKD_HOST, DFLOCKD_PORT, DFLOCKD_COMPAT, the auth token's),
// so that a probe run beside the server with the server's environment
// needs no arguments.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

const healthUsage = `usage: dflockd health [--addr HOST:PORT | --http URL] [--timeout D] [--compat v2|v1|rf]
                      [--auth-token-file FILE] [--tls-cert FILE]

Asks a running server whether it answers and exits 0 (healthy) or 1 (not),
printing one line that says why: on stdout when healthy, on stderr when
not. A usage error exits 2. For a container's HEALTHCHECK, which runs it
with the server's environment: HEALTHCHECK CMD ["/dflockd", "health"].

It pings the line port: --addr, else DFLOCKD_HOST and DFLOCKD_PORT as the
server reads them (a host of all interfaces, empty, 0.0.0.0 or ::, is asked
on loopback), else 127.0.0.1:6388. The v1 and rf profiles have no ping:
under --compat v1 or rf (default DFLOCKD_COMPAT) it asks stats instead, and
a ping answered as unknown is asked again as stats. A server with a token
is sent auth first, with the token the server itself would read
(--auth-token-file, DFLOCKD_AUTH_TOKEN, DFLOCKD_AUTH_TOKEN_FILE). A server
that answers anything but ok (error_draining, error_auth, another
protocol) is not healthy. A server with TLS (--tls-cert, default
DFLOCKD_TLS_CERT) is asked over TLS and must present that certificate,
the file's first: the probe runs beside the server, with its files, so it
pins the certificate rather than trusting a CA for a name. A server that
asks for client certificates (--tls-client-ca) cannot be probed.

  --addr HOST:PORT         the line port to ping
  --http URL               ask GET /health of the HTTP API instead: a URL
                           (http://HOST:PORT[/PATH], the path /health if
                           none) or HOST:PORT
  --timeout D              give up after D: a duration (500ms, 2s) or
                           whole seconds (default 3s)
  --compat v2|v1|rf        the server's profile (default DFLOCKD_COMPAT, v2)
  --auth-token-file FILE   the token, if the server needs one
  --tls-cert FILE          the server's certificate, if it serves TLS
`

// healthFlags are the flags of dflockd health, in usage order; the
// completion scripts offer them, and those taking a value no others.
var healthFlags = []struct {
	name  string
	value bool
}{
	{"addr", true}, {"http", true}, {"timeout", true}, {"compat", true}, {"auth-token-file", true},
	{"tls-cert", true},
}

// Limits of a probe; each has a reason.
const (
	// healthDefaultTimeout leaves room under the 5 s a HEALTHCHECK of
	// the image waits (dist/container/Containerfile), so that a slow server
	// is reported with our reason rather than killed.
	healthDefaultTimeout = 3 * time.Second
	// healthMaxReply bounds what is read of a reply: stats lists every
	// lock, and its first bytes tell all a probe needs.
	healthMaxReply = 4096
	// healthQuote is how much of an unexpected reply the reason shows.
	healthQuote = 60
)

// healthProbe is one parsed dflockd health command line.
type healthProbe struct {
	addr    string // line port, when httpURL is ""
	httpURL string
	timeout time.Duration
	compat  string
	token   string      // "" = no auth
	tls     *tls.Config // nil = plain TCP
}

func runHealth(args []string, stdout, stderr io.Writer) int {
	p, err := parseHealth(args, os.LookupEnv)
	if err != nil {
		return usageError(stderr, "health: %v (see dflockd health --help)", err)
	}
	var what string
	if p.httpURL != "" {
		what, err = p.checkHTTP()
	} else {
		what, err = p.checkLine()
	}
	if err != nil {
		fmt.Fprintf(stderr, "unhealthy: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "healthy: %s\n", what)
	return 0
}

// parseHealth reads the command line, and the server's variables for what
// it leaves out.
func parseHealth(args []string, getenv func(string) (string, bool)) (*healthProbe, error) {
	env := func(name string) (string, bool) {
		v, ok := getenv(name)
		return v, ok && v != "" // an empty variable counts as unset, as for the server
	}
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "", "")
	httpAddr := fs.String("http", "", "")
	timeout := fs.String("timeout", "", "")
	compat := fs.String("compat", "", "")
	tokenFile := fs.String("auth-token-file", "", "")
	tlsCert := fs.String("tls-cert", "", "")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["addr"] && set["http"] {
		return nil, errors.New("--addr and --http exclude each other")
	}

	p := &healthProbe{timeout: healthDefaultTimeout, compat: compatV2}
	if set["timeout"] {
		d, err := parseProbeTimeout(*timeout)
		if err != nil {
			return nil, err
		}
		p.timeout = d
	}
	if set["compat"] {
		p.compat = *compat
	} else if v, ok := env("DFLOCKD_COMPAT"); ok {
		p.compat = v
	}
	p.compat = strings.ToLower(strings.TrimSpace(p.compat))
	switch p.compat {
	case compatV2, compatV1, compatRF:
	default:
		return nil, fmt.Errorf("--compat %q: want v2, v1 or rf", p.compat)
	}

	certFile, ok := *tlsCert, set["tls-cert"]
	if !ok {
		certFile, ok = env("DFLOCKD_TLS_CERT")
	}
	if ok {
		cfg, err := pinnedTLS(certFile)
		if err != nil {
			return nil, err
		}
		p.tls = cfg
	}

	if set["http"] {
		u, err := healthURL(*httpAddr, p.tls != nil)
		if err != nil {
			return nil, err
		}
		p.httpURL = u
		return p, nil // /health needs no token
	}
	if set["addr"] {
		if _, _, err := net.SplitHostPort(*addr); err != nil {
			return nil, fmt.Errorf("--addr %q: want HOST:PORT", *addr)
		}
		p.addr = *addr
	} else {
		host, _ := env("DFLOCKD_HOST")
		port := strconv.Itoa(DefaultConfig().Port)
		if v, ok := env("DFLOCKD_PORT"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 || n > maxPort {
				return nil, fmt.Errorf("DFLOCKD_PORT %q: want a port, 1..%d", v, maxPort)
			}
			port = strconv.Itoa(n)
		}
		p.addr = net.JoinHostPort(probeHost(host), port)
	}

	cli := func(name string) (source, bool) {
		if name == flagAuthTokenFile && set["auth-token-file"] {
			return source{name: "--" + name, text: *tokenFile}, true
		}
		return source{}, false
	}
	envSource := func(name string) (source, bool) {
		v, ok := env(name)
		return source{name: name, text: v, env: true}, ok
	}
	token, err := resolveAuthToken(cli, envSource, p.compat == compatV1)
	if err != nil {
		return nil, err
	}
	p.token = token
	return p, nil
}

// probeHost is where to reach a server listening on host: on loopback
// when it listens on every interface.
func probeHost(host string) string {
	host = strings.TrimSpace(host)
	switch host {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::", "[::]":
		return "::1"
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// parseProbeTimeout reads a duration, or whole seconds as the server's
// flags take them.
func parseProbeTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		n, nerr := strconv.Atoi(s)
		if nerr != nil {
			return 0, fmt.Errorf("--timeout %q: want a duration (500ms, 2s) or whole seconds", s)
		}
		d = time.Duration(n) * time.Second
	}
	if d <= 0 {
		return 0, fmt.Errorf("--timeout %q: must be more than zero", s)
	}
	return d, nil
}

// pinnedTLS is a client configuration that accepts only a server whose
// certificate is the first of certFile. The probe runs beside the server
// with its files, and asks an address, which the certificate need not
// name, so it pins instead of verifying a chain to a name.
func pinnedTLS(certFile string) (*tls.Config, error) {
	data, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert: %v", err)
	}
	var want []byte
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type == "CERTIFICATE" {
			want = block.Bytes
			break
		}
	}
	if want == nil {
		return nil, fmt.Errorf("--tls-cert %s: no PEM certificate in it", certFile)
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // the pin below replaces chain and name checks
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, want) {
				return fmt.Errorf("the server's certificate is not the one in %s", certFile)
			}
			return nil
		},
	}, nil
}

// healthURL makes --http's value a URL, /health when it names no path,
// https when the server serves TLS.
func healthURL(s string, useTLS bool) (string, error) {
	if !strings.Contains(s, "://") {
		if useTLS {
			s = "https://" + s
		} else {
			s = "http://" + s
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("--http %q: want http://HOST:PORT[/PATH] or HOST:PORT", s)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/health"
	}
	return u.String(), nil
}

// checkLine pings the line port (stats in the profiles without ping),
// after auth when there is a token, and says what answered.
func (p *healthProbe) checkLine() (string, error) {
	start := time.Now()
	conn, err := net.DialTimeout("tcp", p.addr, p.timeout)
	if err != nil {
		return "", fmt.Errorf("%s: %v", p.addr, dialReason(err))
	}
	defer conn.Close()
	conn.SetDeadline(start.Add(p.timeout))
	if p.tls != nil {
		tc := tls.Client(conn, p.tls)
		if err := tc.Handshake(); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("no reply within %v", p.timeout)
			}
			return "", fmt.Errorf("%s: TLS handshake: %v", p.addr, err)
		}
		conn = tc
	}
	r := bufio.NewReaderSize(conn, healthMaxReply)
	ask := func(req string) (string, error) {
		if _, err := io.WriteString(conn, req); err != nil {
			return "", err
		}
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			err = nil // a long stats reply: its start is enough
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return "", fmt.Errorf("no reply within %v", p.timeout)
			}
			if !errors.Is(err, io.EOF) {
				return "", err
			}
			if len(line) == 0 {
				// What a TLS listener does with plain text, and a server
				// at --max-connections with one more connection.
				why := "the connection was closed without a reply"
				if p.tls == nil {
					why += " (a server with TLS: DFLOCKD_TLS_CERT or --tls-cert; or at --max-connections)"
				}
				return "", errors.New(why)
			}
			// A reply cut short by the close: judged as any other.
		}
		return string(bytes.TrimRight(line, "\r\n")), nil
	}
	if p.token != "" {
		reply, err := ask("auth\n_\n" + p.token + "\n")
		if err != nil {
			return "", fmt.Errorf("%s: auth: %v", p.addr, err)
		}
		if reply != "ok" {
			return "", fmt.Errorf("%s: auth answered %s", p.addr, quoteReply(reply))
		}
	}
	op := "ping"
	if p.compat != compatV2 {
		op = "stats"
	}
	reply, err := ask(op + "\n_\n_\n")
	if err == nil && op == "ping" && reply == "error" {
		// A v1 or rf server, whatever DFLOCKD_COMPAT says here.
		op = "stats"
		reply, err = ask("stats\n_\n_\n")
	}
	if err != nil {
		return "", fmt.Errorf("%s: %s: %v", p.addr, op, err)
	}
	ok := reply == "ok"
	if op == "stats" {
		ok = strings.HasPrefix(reply, "ok {")
	}
	if !ok {
		reason := fmt.Sprintf("%s: %s answered %s", p.addr, op, quoteReply(reply))
		if reply == "error_auth" && p.token == "" {
			reason += ": the server needs a token (DFLOCKD_AUTH_TOKEN, DFLOCKD_AUTH_TOKEN_FILE or --auth-token-file)"
		}
		return "", errors.New(reason)
	}
	return fmt.Sprintf("%s answered %s in %v", p.addr, op, time.Since(start).Round(10*time.Microsecond)), nil
}

// checkHTTP asks GET /health (or the URL's path) for 200 and status ok.
func (p *healthProbe) checkHTTP() (string, error) {
	start := time.Now()
	c := &http.Client{Timeout: p.timeout, Transport: &http.Transport{TLSClientConfig: p.tls}}
	resp, err := c.Get(p.httpURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
			if ue.Timeout() {
				err = fmt.Errorf("no reply within %v", p.timeout)
			}
		}
		return "", fmt.Errorf("GET %s: %v", p.httpURL, dialReason(err))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, healthMaxReply))
	var doc struct {
		Status string `json:"status"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &doc) != nil || doc.Status != "ok" {
		return "", fmt.Errorf("GET %s: %s %s", p.httpURL, resp.Status, quoteReply(string(bytes.TrimSpace(body))))
	}
	return fmt.Sprintf("GET %s answered %s in %v", p.httpURL, resp.Status, time.Since(start).Round(10*time.Microsecond)), nil
}

// dialReason shortens a dial error to the system's reason ("connection
// refused"), which is what an operator reads in a health log.
func dialReason(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		if oe.Timeout() {
			return errors.New("no connection within the timeout")
		}
		var se *os.SyscallError
		if errors.As(oe.Err, &se) {
			return se.Err
		}
		return oe.Err
	}
	return err
}

// quoteReply quotes a reply for a reason line, cut to healthQuote bytes.
func quoteReply(s string) string {
	if s == "" {
		return "nothing"
	}
	if len(s) > healthQuote {
		return strconv.Quote(s[:healthQuote]) + "…"
	}
	return strconv.Quote(s)
}
