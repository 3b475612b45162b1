package kubernetes

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The pods' command lines run as processes on this machine, as the
// kubelet would start them: the args with the container's environment
// expanded ($(POD_NAME) and the others), the environment alone (nothing
// of the test's), the Secrets' items and the claim as files. What is
// changed is only what a pod has and a machine does not: pod N's DNS name
// (and its every-interface binds) become the loopback address 127.0.0.M,
// the mount paths a directory of the test. The ports are the manifest's.

// namespace is the pods' namespace in the DNS names.
const namespace = "ns"

const (
	startWithin = 30 * time.Second // a member listens, or a leader is elected
	replyWithin = 10 * time.Second // one request's reply
	stopWithin  = 45 * time.Second // SIGTERM drains within --shutdown-timeout (30 s)
	logKept     = 64 << 10         // bytes of a member's log kept for a failure's report
)

var built struct {
	once sync.Once
	path string
	err  error
}

// serverBinary builds ./cmd/dflockd once per run; DFLOCKD_TEST_BINARY
// names one built already (.ci/run passes its own).
func serverBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DFLOCKD_TEST_BINARY"); p != "" {
		return p
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "dflockd-k8s-bin")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "dflockd")
		cmd := exec.Command("go", "build", "-o", built.path, "./cmd/dflockd")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/dflockd: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// tailBuffer keeps the last logKept bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - logKept; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// pod is one StatefulSet pod as a process.
type pod struct {
	t    *testing.T
	name string
	ip   string // its DNS name's stand-in, and its every-interface binds'
	args []string
	env  []string
	cmd  *exec.Cmd
	log  *tailBuffer
	done chan error
}

// podIP is pod ordinal's loopback address; base keeps the manifests'
// pods apart.
func podIP(base, ordinal int) string { return fmt.Sprintf("127.0.0.%d", base+ordinal) }

// dnsName is a StatefulSet pod's stable name through its governing
// Service.
func dnsName(sts appsv1.StatefulSet, ordinal int, clusterDomain string) string {
	return fmt.Sprintf("%s-%d.%s.%s.svc.%s", sts.Name, ordinal, sts.Spec.ServiceName, namespace, clusterDomain)
}

// newPod makes pod ordinal's command line and files under root.
func newPod(t *testing.T, sts appsv1.StatefulSet, ordinal, base int, root string, secrets map[string]map[string][]byte) *pod {
	t.Helper()
	spec := sts.Spec.Template.Spec
	c := spec.Containers[0]
	p := &pod{t: t, name: fmt.Sprintf("%s-%d", sts.Name, ordinal), ip: podIP(base, ordinal)}
	env, err := podEnv(c, p.name, namespace)
	if err != nil {
		t.Fatal(err)
	}
	// Mounts: a directory each; a Secret's items written as the kubelet
	// writes them.
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]string{} // mount path -> directory here
	for _, vm := range c.VolumeMounts {
		dir := filepath.Join(root, p.name, filepath.FromSlash(vm.MountPath))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		mounts[vm.MountPath] = dir
		if v, ok := volumes[vm.Name]; ok && v.Secret != nil {
			for _, it := range v.Secret.Items {
				data, ok := secrets[v.Secret.SecretName][it.Key]
				if !ok {
					t.Fatalf("volume %s: the test has no key %s of Secret %s", v.Name, it.Key, v.Secret.SecretName)
				}
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(it.Path)), data, 0o400); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	names := map[string]string{}
	for j := range int(*sts.Spec.Replicas) {
		names[dnsName(sts, j, env["CLUSTER_DOMAIN"])] = podIP(base, j)
	}
	local := func(v string) string {
		for name, ip := range names {
			v = strings.ReplaceAll(v, name, ip)
		}
		for mp, dir := range mounts {
			if v == mp || strings.HasPrefix(v, mp+"/") {
				return dir + v[len(mp):]
			}
		}
		return v
	}
	// A bind on every interface of the pod is a bind on its address.
	every := func(v string) string {
		switch {
		case v == "0.0.0.0" || v == "":
			return p.ip
		case strings.HasPrefix(v, ":") || strings.HasPrefix(v, "0.0.0.0:"):
			return p.ip + v[strings.IndexByte(v, ':'):]
		}
		return v
	}
	for _, a := range c.Args {
		name, value, ok := strings.Cut(expand(a, env), "=")
		if ok {
			if name == "--host" || name == "--http-host" || name == "--raft-bind" {
				value = every(value)
			}
			a = name + "=" + local(value)
		}
		p.args = append(p.args, a)
	}
	for _, e := range c.Env {
		v := env[e.Name]
		if e.Name == "DFLOCKD_HOST" || e.Name == "DFLOCKD_HTTP_HOST" || e.Name == "DFLOCKD_RAFT_BIND" {
			v = every(v)
		}
		p.env = append(p.env, e.Name+"="+local(v))
	}
	for _, s := range append(append([]string{}, p.args...), p.env...) {
		if strings.Contains(s, ".svc.") || strings.Contains(s, "0.0.0.0") {
			t.Fatalf("pod %s: %q names what this machine does not have (a pod's DNS name, every interface)", p.name, s)
		}
	}
	return p
}

// start runs the pod's process; it is killed when the test ends.
func (p *pod) start(ctx context.Context) {
	p.t.Helper()
	p.t.Logf("%s: env %s\n\targs %s", p.name, strings.Join(p.env, " "), strings.Join(p.args, " "))
	p.log = new(tailBuffer)
	p.cmd = exec.CommandContext(ctx, serverBinary(p.t), p.args...)
	p.cmd.Env = p.env
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.done = make(chan error, 1)
	cmd, log, done := p.cmd, p.log, p.done
	go func() { done <- cmd.Wait() }()
	p.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if p.t.Failed() {
			p.t.Logf("%s: %s %s\n%s log:\n%s", p.name, strings.Join(p.env, " "), strings.Join(p.args, " "), p.name, log.String())
		}
	})
}

// stop sends SIGTERM and waits for the drain to end.
func (p *pod) stop() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		if err != nil {
			p.t.Fatalf("%s exited with %v after SIGTERM", p.name, err)
		}
	case <-time.After(stopWithin):
		p.t.Fatalf("%s still running %v after SIGTERM", p.name, stopWithin)
	}
}

// probe asks the pod's HTTP probe until it answers 200, and fails the
// test if it did not within startWithin.
func (p *pod) probe(pr *corev1.Probe, c corev1.Container) {
	p.t.Helper()
	port, err := containerPort(c, pr.HTTPGet.Port)
	if err != nil {
		p.t.Fatal(err)
	}
	url := fmt.Sprintf("http://%s%s", net.JoinHostPort(p.ip, strconv.Itoa(int(port))), pr.HTTPGet.Path)
	hc := &http.Client{Timeout: time.Second}
	last := "no answer"
	for deadline := time.Now().Add(startWithin); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-p.done:
			p.done <- err
			p.t.Fatalf("%s exited (%v) before %s answered 200", p.name, err, url)
		default:
		}
		resp, err := hc.Get(url)
		if err != nil {
			last = err.Error()
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		last = resp.Status
	}
	p.t.Fatalf("%s: GET %s: %s after %v", p.name, url, last, startWithin)
}

// ask sends one line-protocol request after auth, on a new connection to
// the pod's client port, and returns the reply line.
func (p *pod) ask(port int32, token, cmd, key, arg string) string {
	p.t.Helper()
	c, err := net.DialTimeout("tcp", net.JoinHostPort(p.ip, strconv.Itoa(int(port))), replyWithin)
	if err != nil {
		p.t.Fatalf("%s: %v", p.name, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(replyWithin))
	r := bufio.NewReader(c)
	fmt.Fprintf(c, "auth\n_\n%s\n", token)
	if line, err := r.ReadString('\n'); line != "ok\n" {
		p.t.Fatalf("%s: auth: %q %v", p.name, line, err)
	}
	fmt.Fprintf(c, "%s\n%s\n%s\n", cmd, key, arg)
	line, err := r.ReadString('\n')
	if err != nil {
		p.t.Fatalf("%s: %s %s %s: %v", p.name, cmd, key, arg, err)
	}
	return strings.TrimSuffix(line, "\n")
}

// checkBindable fails the test, saying why, if another process holds an
// address and port a pod listens on: the pods use the manifests' ports.
func checkBindable(t *testing.T, ip string, c corev1.Container) {
	t.Helper()
	for _, cp := range c.Ports {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(int(cp.ContainerPort))))
		if err != nil {
			t.Fatalf("port %s (%d) on %s is taken on this machine, the pod could not listen: %v", cp.Name, cp.ContainerPort, ip, err)
		}
		ln.Close()
	}
}

// testSecrets are the Secrets' contents: random tokens, and a raft CA
// with one certificate for every member (they check the CA's signature,
// not names).
func testSecrets(t *testing.T) map[string]map[string][]byte {
	t.Helper()
	token := func(n int) []byte {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return []byte(hex.EncodeToString(b) + "\n") // a trailing newline, as files often end: trimmed
	}
	caCert, caKey := certificate(t, "dflockd-raft-ca", nil, nil)
	crt, key := certificate(t, "dflockd-raft", caCert, caKey)
	return map[string]map[string][]byte{
		"dflockd": {"auth-token": token(16), "raft-auth-token": token(24), "admin-token": token(16)},
		"dflockd-raft-tls": {"ca.crt": pemBlock("CERTIFICATE", caCert.Raw), "tls.crt": pemBlock("CERTIFICATE", crt.Raw),
			"tls.key": pemKey(t, key)},
	}
}

// certificate makes a CA (parent nil) or a leaf it signs, for both ends
// of a TLS connection.
func certificate(t *testing.T, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func pemKey(t *testing.T, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pemBlock("PRIVATE KEY", der)
}

// podsOf decodes a manifest and makes its StatefulSet's pods.
func podsOf(t *testing.T, file string, base int, secrets map[string]map[string][]byte) (appsv1.StatefulSet, []*pod) {
	t.Helper()
	m, err := decodeManifest(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.sets) != 1 {
		t.Fatalf("%s: %d StatefulSets", file, len(m.sets))
	}
	sts := m.sets[0]
	root := t.TempDir()
	var pods []*pod
	for i := range int(*sts.Spec.Replicas) {
		checkBindable(t, podIP(base, i), sts.Spec.Template.Spec.Containers[0])
		pods = append(pods, newPod(t, sts, i, base, root, secrets))
	}
	return sts, pods
}

// TestClusterManifestMembers runs cluster.yaml's three members: they
// elect a leader (every member's readiness probe answers 200), a write
// through one member is read through another (followers relay to the
// leader, --cluster-forward), and a member stopped and started again on
// its directory, --cluster-bootstrap still given, rejoins with the state.
func TestClusterManifestMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three server processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	secrets := testSecrets(t)
	sts, pods := podsOf(t, "cluster.yaml", 11, secrets)
	c := sts.Spec.Template.Spec.Containers[0]
	client, _ := containerPort(c, portByName("client"))
	token := strings.TrimSpace(string(secrets["dflockd"]["auth-token"]))
	for _, p := range pods {
		p.start(ctx)
	}
	for _, p := range pods {
		p.probe(c.LivenessProbe, c)
		p.probe(c.ReadinessProbe, c)
		// The listening line says the raft TLS Secret's files are in use.
		if !strings.Contains(p.log.String(), `"raft_tls":true`) {
			t.Errorf("%s does not run raft over TLS", p.name)
		}
	}
	if got := pods[0].ask(client, token, "incr", "k8s", "1"); got != "ok 1" {
		t.Fatalf("incr k8s 1 through %s = %q, want ok 1", pods[0].name, got)
	}
	if got := pods[1].ask(client, token, "incr", "k8s", "1"); got != "ok 2" {
		t.Fatalf("incr k8s 1 through %s = %q, want ok 2", pods[1].name, got)
	}
	// A member restarted (a new image, a drained node) finds its raft
	// directory on its claim and rejoins; --cluster-bootstrap does nothing
	// on a directory that is not empty.
	last := pods[len(pods)-1]
	last.stop()
	last.start(ctx)
	last.probe(c.ReadinessProbe, c)
	if got := last.ask(client, token, "incr", "k8s", "1"); got != "ok 3" {
		t.Fatalf("incr k8s 1 through %s restarted = %q, want ok 3", last.name, got)
	}
}

// TestSingleNodeManifest runs single-node.yaml's pod: it is ready, takes
// the auth token from its Secret's file, and keeps its fence floor on
// the claim's volume.
func TestSingleNodeManifest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	secrets := testSecrets(t)
	sts, pods := podsOf(t, "single-node.yaml", 21, secrets)
	c := sts.Spec.Template.Spec.Containers[0]
	client, _ := containerPort(c, portByName("client"))
	token := strings.TrimSpace(string(secrets["dflockd"]["auth-token"]))
	p := pods[0]
	p.start(ctx)
	p.probe(c.LivenessProbe, c)
	p.probe(c.ReadinessProbe, c)
	if got := p.ask(client, token, "l", "k8s", "0 5"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("l k8s through %s = %q, want a grant", p.name, got)
	}
	var fence string
	for _, a := range p.args {
		if v, ok := strings.CutPrefix(a, "--fence-state-file="); ok {
			fence = v
		}
	}
	p.stop()
	if st, err := os.Stat(fence); err != nil || st.Size() == 0 {
		t.Fatalf("fence state file %q after a grant and a drain: %v", fence, err)
	}
}
