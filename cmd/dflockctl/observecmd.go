package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The lock observatory from a terminal, through the server's HTTP API
// (--http-port): "locks" lists who holds each key and who queues behind
// it (GET /v1/keys), "deadlocks" the deadlocks among waiters (GET
// /v1/deadlocks), and "admin release" takes a key from its holder (POST
// /v1/admin/locks/{key}/release, with the admin token). Every member of
// a cluster answers the read-only ones from its replica.

const locksUsage = `usage: dflockctl locks [PREFIX] [--kind K,...] [--max N] [--http HOST:PORT,...]

Lists the locks, semaphores and read-write locks (--kind: any of lock,
semaphore, rwlock, counter, kv, list, barrier) whose key starts with
PREFIX: each holder (connection, transport, address, lease left, fence)
and the FIFO queue behind it; with the server's --policy-file, the
identity each client authenticated as. Reads the server's HTTP API
(--http-port).`

const deadlocksUsage = `usage: dflockctl deadlocks [--http HOST:PORT,...]

Lists the deadlocks among lock waiters: sessions that each wait for a key
only another of them can release (with the server's --policy-file, each
named with its identity). Exits 0 with none, 5 with some (and
prints them), 1 (or 69, 77) when it could not ask. Reads the server's HTTP
API (--http-port).`

const adminUsage = `usage: dflockctl admin release KEY [--kind lock|semaphore] [--fence F] [--reason TEXT]
                              [--http HOST:PORT,...] [--admin-token T]

Takes KEY from its holder (only the one with fence F, if given) and hands
it to the next waiter; the holder's next renew or release fails. The
server logs it with TEXT and shows it on the key's timeline. Needs the
server's --admin-token (default: $DFLOCKD_ADMIN_TOKEN, $DFLOCKD_ADMIN_TOKEN_FILE).`

// observeTimeout bounds one read of the observatory.
const observeTimeout = 10 * time.Second

// maxListed is the default bound of "locks": pages are read until then.
const maxListed = 1000

// observatory is an HTTP client of one server's API, from --http and the
// global options (TLS, the auth token as a bearer token).
type observatory struct {
	name  string
	addrs []string
	hc    *http.Client
	base  string // scheme://
	auth  string
}

func (c *cli) observatory(name string, g *globals) (*observatory, int) {
	s, err := g.resolve(c.getenv)
	if err != nil {
		return nil, c.fail(exitUsage, "%s: %v", name, err)
	}
	addrs, err := g.httpAddrs(c.getenv, s.servers[0])
	if err != nil {
		return nil, c.fail(exitUsage, "%s: %v", name, err)
	}
	ob := &observatory{name: name, addrs: addrs, hc: &http.Client{Timeout: observeTimeout}, base: "http://", auth: s.dialer.AuthToken}
	if s.dialer.TLSConfig != nil {
		ob.base = "https://"
		ob.hc.Transport = &http.Transport{TLSClientConfig: s.dialer.TLSConfig}
	}
	return ob, 0
}

// do makes the call at the first address that answers.
func (ob *observatory) do(method, path string, header map[string]string) (*adminAnswer, error) {
	var lastErr error
	for _, addr := range ob.addrs {
		req, err := http.NewRequest(method, ob.base+addr+path, nil)
		if err != nil {
			return nil, err
		}
		if ob.auth != "" {
			req.Header.Set("Authorization", "Bearer "+ob.auth)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		a, err := doAdmin(ob.hc, req)
		if err == nil {
			return a, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// failure turns an HTTP API answer that is not 200 into the exit code
// and message (the cluster command's too).
func (c *cli) failure(name string, a *adminAnswer) int {
	why := a.Error
	if a.Detail != "" {
		why += ": " + a.Detail
	}
	switch {
	case a.status == http.StatusUnauthorized:
		return c.fail(exitNoPerm, "%s: the server rejected the auth token (or the admin token)", name)
	case a.status == http.StatusForbidden:
		// The server's policy refuses the identity the token names; the
		// detail names the identity and the deciding rule.
		if a.Detail == "" {
			return c.fail(exitNoPerm, "%s: forbidden (403): the identity the auth token names may not", name)
		}
		return c.fail(exitNoPerm, "%s: forbidden: %s", name, a.Detail)
	case a.Error == "admin_disabled":
		return c.fail(exitFailure, "%s: the server has no --admin-token: its admin routes are off", name)
	case a.status == http.StatusBadRequest:
		return c.fail(exitUsage, "%s: refused: %s", name, why)
	case a.Error != "":
		return c.fail(exitFailure, "%s: %d %s", name, a.status, why)
	}
	return c.fail(exitFailure, "%s: unexpected answer %d %q (is this dflockd-ng's HTTP API?)", name, a.status, a.raw)
}

// The JSON of the observatory, as much of it as the commands print.
type (
	obsClient struct {
		SessionID  string `json:"session_id"`
		ConnID     string `json:"conn_id"`
		Open       bool   `json:"open"`
		Transport  string `json:"transport"`
		RemoteAddr string `json:"remote_addr"`
		Identity   string `json:"identity,omitempty"` // with a policy: who it authenticated as (omitted: top --json as before without one)
	}
	obsKey struct {
		Key     string `json:"key"`
		Kind    string `json:"kind"`
		Limit   int    `json:"limit"`
		Holders []struct {
			Client           obsClient `json:"client"`
			Fence            string    `json:"fence"`
			Writer           bool      `json:"writer"`
			LeaseRemainingMs int64     `json:"lease_remaining_ms"`
		} `json:"holders"`
		Waiters []struct {
			Client   obsClient `json:"client"`
			Writer   bool      `json:"writer"`
			WaitedMs *int64    `json:"waited_ms"`
		} `json:"waiters"`
		HoldersTotal int `json:"holders_total"`
		WaitersTotal int `json:"waiters_total"`
	}
	obsDeadlock struct {
		Since    time.Time   `json:"since"`
		Sessions []obsClient `json:"sessions"`
		Waits    []struct {
			SessionID string   `json:"session_id"`
			Key       string   `json:"key"`
			Kind      string   `json:"kind"`
			On        []string `json:"on"`
		} `json:"waits"`
		Behind []obsClient `json:"behind"`
	}
)

func (o obsClient) String() string {
	s := "#" + o.ConnID
	if o.Transport != "" {
		s += " " + o.Transport
	}
	if o.RemoteAddr != "" {
		s += " " + o.RemoteAddr
	}
	if !o.Open {
		s += " (closed)"
	}
	return s
}

// named is String with the policy identity the session authenticated
// as, when it has one: "#4 tcp 127.0.0.1:50312 as team-a".
func (o obsClient) named() string {
	if o.Identity == "" {
		return o.String()
	}
	return o.String() + " as " + o.Identity
}

// identified reports whether a holder or waiter of keys carries a policy
// identity. The tables show an IDENTITY column only then, so that what
// they print of a server without a policy stays as it was.
func identified(keys []obsKey) bool {
	for _, k := range keys {
		for _, h := range k.Holders {
			if h.Client.Identity != "" {
				return true
			}
		}
		for _, w := range k.Waiters {
			if w.Client.Identity != "" {
				return true
			}
		}
	}
	return false
}

// locks is "dflockctl locks [PREFIX]".
func (c *cli) locks(g *globals, args []string) int {
	kinds, most := "lock,semaphore,rwlock", maxListed
	pos, code, ok := c.parseCommand("locks", locksUsage, g, args, 0, 1, func(fs *flag.FlagSet) {
		fs.StringVar(&kinds, "kind", kinds, "the kinds of key to list, comma-separated")
		fs.IntVar(&most, "max", most, "list at most this many keys")
	})
	if !ok {
		return code
	}
	if most < 1 {
		return c.fail(exitUsage, "locks: --max must be at least 1")
	}
	ob, code := c.observatory("locks", g)
	if ob == nil {
		return code
	}
	prefix := ""
	if len(pos) == 1 {
		prefix = pos[0]
	}
	var keys []json.RawMessage
	cursor := ""
	for len(keys) < most {
		q := url.Values{"prefix": {prefix}, "kind": {kinds}, "limit": {strconv.Itoa(min(most-len(keys), 1000))}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		a, err := ob.do(http.MethodGet, "/v1/keys?"+q.Encode(), nil)
		if err != nil {
			return c.fail(exitUnavailable, "locks: %v", err)
		}
		if a.status != http.StatusOK {
			return c.failure("locks", a)
		}
		var page struct {
			Keys       []json.RawMessage `json:"keys"`
			NextCursor string            `json:"next_cursor"`
		}
		if err := json.Unmarshal(a.raw, &page); err != nil {
			return c.fail(exitFailure, "locks: %v", err)
		}
		keys = append(keys, page.Keys...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if g.json {
		c.emit(g, "", map[string]any{"keys": keys, "truncated": cursor != ""})
		return exitOK
	}
	parsed := make([]obsKey, len(keys))
	for i, raw := range keys {
		if err := json.Unmarshal(raw, &parsed[i]); err != nil {
			return c.fail(exitFailure, "locks: %v", err)
		}
	}
	// With identities, the holder's is a column of its own (after HELD
	// BY), and each waiter in QUEUE is named with its own.
	ids := identified(parsed)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	if ids {
		fmt.Fprintln(tw, "KEY\tKIND\tHELD BY\tIDENTITY\tLEASE LEFT\tFENCE\tQUEUE")
	} else {
		fmt.Fprintln(tw, "KEY\tKIND\tHELD BY\tLEASE LEFT\tFENCE\tQUEUE")
	}
	for _, k := range parsed {
		kind := k.Kind
		if k.Kind == "semaphore" {
			kind += "/" + strconv.Itoa(k.Limit)
		}
		queue := strconv.Itoa(k.WaitersTotal)
		for i, w := range k.Waiters {
			if i == 3 {
				queue += ", …"
				break
			}
			sep := ": "
			if i > 0 {
				sep = ", "
			}
			queue += sep + w.Client.named()
			if w.WaitedMs != nil {
				queue += " (" + (time.Duration(*w.WaitedMs) * time.Millisecond).Round(100*time.Millisecond).String() + ")"
			}
		}
		if len(k.Holders) == 0 {
			if ids {
				fmt.Fprintf(tw, "%s\t%s\t-\t\t\t\t%s\n", k.Key, kind, queue)
			} else {
				fmt.Fprintf(tw, "%s\t%s\t-\t\t\t%s\n", k.Key, kind, queue)
			}
		}
		for i, h := range k.Holders {
			who := h.Client.String()
			if h.Writer {
				who += " (write)"
			}
			if ids {
				// Unknown for a closed session, and on a cluster for one
				// that another member serves.
				who += "\t" + cmp.Or(h.Client.Identity, "-")
			}
			left := (time.Duration(h.LeaseRemainingMs) * time.Millisecond).Round(100 * time.Millisecond).String()
			if i == 0 {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.Key, kind, who, left, h.Fence, queue)
			} else {
				fmt.Fprintf(tw, "\t\t%s\t%s\t%s\t\n", who, left, h.Fence)
			}
		}
	}
	tw.Flush()
	if cursor != "" {
		fmt.Fprintf(&b, "(the first %d keys; narrow PREFIX or raise --max)\n", len(keys))
	}
	fmt.Fprint(c.stdout, b.String())
	return exitOK
}

// deadlocks is "dflockctl deadlocks".
func (c *cli) deadlocks(g *globals, args []string) int {
	if _, code, ok := c.parseCommand("deadlocks", deadlocksUsage, g, args, 0, 0, nil); !ok {
		return code
	}
	ob, code := c.observatory("deadlocks", g)
	if ob == nil {
		return code
	}
	a, err := ob.do(http.MethodGet, "/v1/deadlocks", nil)
	if err != nil {
		return c.fail(exitUnavailable, "deadlocks: %v", err)
	}
	if a.status != http.StatusOK {
		return c.failure("deadlocks", a)
	}
	var doc struct {
		Deadlocks []obsDeadlock `json:"deadlocks"`
	}
	if err := json.Unmarshal(a.raw, &doc); err != nil {
		return c.fail(exitFailure, "deadlocks: %v", err)
	}
	var b strings.Builder
	for i, d := range doc.Deadlocks {
		byID := map[string]obsClient{}
		for _, s := range d.Sessions {
			byID[s.SessionID] = s
		}
		fmt.Fprintf(&b, "deadlock %d, since %s:\n", i+1, d.Since.Local().Format(time.TimeOnly))
		for _, w := range d.Waits {
			on := make([]string, len(w.On))
			for j, s := range w.On {
				on[j] = byID[s].named()
			}
			fmt.Fprintf(&b, "  %s waits for %s %q, held or queued ahead by %s\n", byID[w.SessionID].named(), w.Kind, w.Key, strings.Join(on, ", "))
		}
		for _, s := range d.Behind {
			fmt.Fprintf(&b, "  %s is stuck behind it\n", s.named())
		}
	}
	if len(doc.Deadlocks) == 0 {
		b.WriteString("no deadlocks\n")
	}
	c.emit(g, strings.TrimSuffix(b.String(), "\n"), rawJSON(strings.TrimSpace(string(a.raw))))
	if len(doc.Deadlocks) > 0 {
		return exitDeadlocks
	}
	return exitOK
}

// admin is "dflockctl admin release KEY".
func (c *cli) admin(g *globals, args []string) int {
	_, rest, code, ok := c.subcommand("admin", adminUsage, g, args, "release")
	if !ok {
		return code
	}
	var o clusterOptions
	kind, fence, reason := "lock", "", ""
	pos, code, ok := c.parseCommand("admin release", adminUsage, g, rest, 1, 1, func(fs *flag.FlagSet) {
		o.define(fs)
		fs.StringVar(&kind, "kind", kind, "lock (the lock space, read-write locks included) or semaphore")
		fs.StringVar(&fence, "fence", "", "release only the holder with this `FENCE`")
		fs.StringVar(&reason, "reason", "", "why, for the server's log and the key's timeline")
	})
	if !ok {
		return code
	}
	const name = "admin release"
	token, err := o.adminToken(c.getenv)
	if err != nil {
		return c.fail(exitUsage, "%s: %v", name, err)
	}
	ob, code := c.observatory(name, g)
	if ob == nil {
		return code
	}
	q := url.Values{"kind": {kind}}
	if fence != "" {
		q.Set("fence", fence)
	}
	if reason != "" {
		q.Set("reason", reason)
	}
	a, err := ob.do(http.MethodPost, "/v1/admin/locks/"+url.PathEscape(pos[0])+"/release?"+q.Encode(), map[string]string{"X-Dflockd-Admin": token})
	if err != nil {
		return c.fail(exitUnavailable, "%s: %v", name, err)
	}
	if a.status != http.StatusOK {
		return c.failure(name, a)
	}
	var r struct {
		Released int `json:"released"`
	}
	if err := json.Unmarshal(a.raw, &r); err != nil {
		return c.fail(exitFailure, "%s: %v", name, errors.Join(err, errors.New(string(a.raw))))
	}
	c.emit(g, fmt.Sprintf("%s: %d holder(s) released", pos[0], r.Released), rawJSON(strings.TrimSpace(string(a.raw))))
	return exitOK
}
