package kubernetes

import (
	"fmt"
	"net"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The manifests, and what each must hold beyond what both share.
var manifests = []struct {
	file    string
	cluster bool // a raft cluster: a headless Service, a PDB, peers
}{
	{"single-node.yaml", false},
	{"cluster.yaml", true},
}

// TestManifests decodes each manifest strictly and checks that its parts
// agree: the ones Kubernetes would only find wrong on a live cluster
// (a selector that matches no pod, a probe on the wrong port, a Secret
// key that does not exist), and the server's flags, which nothing in
// Kubernetes checks at all.
func TestManifests(t *testing.T) {
	specs, err := serverFlags()
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := documentedSecrets("../../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	image, err := readContainerfile("../container/Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range manifests {
		t.Run(mf.file, func(t *testing.T) {
			m, err := decodeManifest(mf.file)
			if err != nil {
				t.Fatal(err)
			}
			checkManifest(t, m, mf.cluster, specs, secrets[mf.file], image)
		})
	}
}

func checkManifest(t *testing.T, m *manifest, cluster bool, specs map[string]flagSpec,
	secrets map[string][]string, image *containerfile) {
	if len(m.sets) != 1 {
		t.Fatalf("%d StatefulSets, want 1", len(m.sets))
	}
	sts := m.sets[0]
	pod := sts.Spec.Template
	podLabels := labels.Set(pod.Labels)
	sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(podLabels) {
		t.Errorf("StatefulSet selector %v does not match its pods' labels %v (%v)", sts.Spec.Selector, pod.Labels, err)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	env, err := podEnv(c, sts.Name+"-0", "ns")
	if err != nil {
		t.Fatal(err)
	}
	set, err := readSettings(c.Args, env, specs)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Command) != 0 {
		t.Errorf("command %q replaces the image's entrypoint, /dflockd", c.Command)
	}

	// Ports: the container's named ports are the server's.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	wantPorts := map[string]string{"client": set.get("port"), "http": set.get("http-port")}
	if cluster {
		_, raftPort, _ := net.SplitHostPort(set.get("raft-addr"))
		_, bindPort, _ := net.SplitHostPort(set.get("raft-bind"))
		if raftPort != bindPort {
			t.Errorf("--raft-addr port %s, --raft-bind port %s: the members dial the one, the member listens on the other", raftPort, bindPort)
		}
		wantPorts["raft"] = bindPort
	}
	if len(ports) != len(wantPorts) {
		t.Errorf("container ports %v, want %v", ports, wantPorts)
	}
	for name, want := range wantPorts {
		if got := strconv.Itoa(int(ports[name])); got != want {
			t.Errorf("container port %s is %s, the server's setting %s", name, got, want)
		}
	}
	for _, p := range []string{set.get("port"), set.get("http-port")} {
		if !image.exposes[p] {
			t.Errorf("port %s: the image does not EXPOSE it (%v)", p, image.exposes)
		}
	}
	if h := set.get("host"); h != "0.0.0.0" && h != "" {
		t.Errorf("--host %q: a Service reaches only a server that listens on the pod's interfaces", h)
	}

	// Services: each selects the pods, and names container ports.
	services := map[string]corev1.Service{}
	for _, s := range m.services {
		services[s.Name] = s
		if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) {
			t.Errorf("Service %s: selector %v does not match the pods' labels %v", s.Name, s.Spec.Selector, pod.Labels)
		}
		for _, p := range s.Spec.Ports {
			got, err := containerPort(c, p.TargetPort)
			if err != nil {
				t.Errorf("Service %s port %s: %v", s.Name, p.Name, err)
			} else if got != p.Port || p.Name != portName(c, got) {
				t.Errorf("Service %s port %s %d: targets container port %s %d", s.Name, p.Name, p.Port, portName(c, got), got)
			}
		}
	}
	gov, ok := services[sts.Spec.ServiceName]
	switch {
	case !ok:
		t.Errorf("serviceName %q: no such Service in the file", sts.Spec.ServiceName)
	case cluster && (gov.Spec.ClusterIP != corev1.ClusterIPNone || !gov.Spec.PublishNotReadyAddresses):
		t.Errorf("Service %s: the members find each other by its DNS names before they are ready: want clusterIP None and publishNotReadyAddresses", gov.Name)
	}

	// Probes: /ready and /health on the HTTP port.
	for _, p := range []struct {
		what  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, "/ready"}, {"liveness", c.LivenessProbe, "/health"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", p.what)
			continue
		}
		g := p.probe.HTTPGet
		port, err := containerPort(c, g.Port)
		if g.Path != p.path || err != nil || strconv.Itoa(int(port)) != set.get("http-port") {
			t.Errorf("%s probe: GET %s on port %v (%v), want %s on --http-port %s", p.what, g.Path, g.Port, err, p.path, set.get("http-port"))
		}
		if tlsOn := set.get("tls-cert") != ""; tlsOn != (g.Scheme == corev1.URISchemeHTTPS) {
			t.Errorf("%s probe: scheme %q, with --tls-cert %q (the HTTP API serves HTTPS with it)", p.what, g.Scheme, set.get("tls-cert"))
		}
	}

	checkSecurity(t, pod.Spec, c, image)
	checkVolumes(t, sts, c, set, cluster, secrets)
	if cluster {
		checkPeers(t, m, sts, c, set, specs)
	} else if *sts.Spec.Replicas != 1 {
		t.Errorf("replicas %d: each replica of a single node is a lock server of its own", *sts.Spec.Replicas)
	}
	if !cluster && (set.get("raft-dir") != "" || len(m.pdbs) != 0) {
		t.Errorf("a single node with --raft-dir %q or a PDB", set.get("raft-dir"))
	}
}

// containerPort is the port a Service's targetPort or a probe's port
// names, by name or number.
func containerPort(c corev1.Container, p intstr.IntOrString) (int32, error) {
	for _, cp := range c.Ports {
		if p.Type == intstr.String && cp.Name == p.StrVal || p.Type == intstr.Int && cp.ContainerPort == p.IntVal {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("container %s has no port %s", c.Name, p.String())
}

func portName(c corev1.Container, port int32) string {
	for _, cp := range c.Ports {
		if cp.ContainerPort == port {
			return cp.Name
		}
	}
	return ""
}

// checkSecurity: non-root as the image's user, no privilege to gain, a
// read-only root, no capability, the runtime's seccomp profile.
func checkSecurity(t *testing.T, pod corev1.PodSpec, c corev1.Container, image *containerfile) {
	t.Helper()
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || sc == nil {
		t.Fatal("no pod or container securityContext")
	}
	uid := strconv.FormatInt(ptrValue(psc.RunAsUser), 10) + ":" + strconv.FormatInt(ptrValue(psc.RunAsGroup), 10)
	if uid != image.user || !ptrValue(psc.RunAsNonRoot) || !ptrValue(sc.RunAsNonRoot) {
		t.Errorf("pod runs as %s (nonRoot %v, container %v), the image's user is %s", uid,
			ptrValue(psc.RunAsNonRoot), ptrValue(sc.RunAsNonRoot), image.user)
	}
	if psc.FSGroup == nil || *psc.FSGroup != ptrValue(psc.RunAsGroup) {
		t.Errorf("fsGroup %v: the volume must be writable by the server's group %d", psc.FSGroup, ptrValue(psc.RunAsGroup))
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || !ptrValue(sc.ReadOnlyRootFilesystem) {
		t.Errorf("allowPrivilegeEscalation %v (set: %v), readOnlyRootFilesystem %v: want false, set, and true",
			ptrValue(sc.AllowPrivilegeEscalation), sc.AllowPrivilegeEscalation != nil, ptrValue(sc.ReadOnlyRootFilesystem))
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("capabilities %+v, want drop ALL, add none", sc.Capabilities)
	}
	for _, sp := range []*corev1.SeccompProfile{psc.SeccompProfile, sc.SeccompProfile} {
		if sp == nil || sp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("seccompProfile %+v, want RuntimeDefault", sp)
		}
	}
	if ptrValue(sc.Privileged) || pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("privileged, or the host's network, PIDs or IPC")
	}
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// checkVolumes: the state lives on the claim's volume, at the image's
// /data; each file setting names a file of a mounted Secret, and the key
// behind it is one docs/kubernetes.md puts in that Secret.
func checkVolumes(t *testing.T, sts appsv1.StatefulSet, c corev1.Container, set *settings, cluster bool,
	secrets map[string][]string) {
	t.Helper()
	claims := map[string]bool{}
	for _, vc := range sts.Spec.VolumeClaimTemplates {
		claims[vc.Name] = true
		if _, ok := vc.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
			t.Errorf("volumeClaimTemplate %s requests no storage", vc.Name)
		}
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	// files: the path of each file a mounted Secret item becomes, to its
	// Secret and key.
	type secretFile struct{ secret, key string }
	files := map[string]secretFile{}
	var dataMount string
	for _, vm := range c.VolumeMounts {
		v, isVolume := volumes[vm.Name]
		switch {
		case claims[vm.Name]:
			dataMount = vm.MountPath
		case !isVolume:
			t.Errorf("volumeMount %s: no such volume or claim", vm.Name)
		case v.Secret != nil:
			if !vm.ReadOnly {
				t.Errorf("volumeMount %s: a Secret mounted writable", vm.Name)
			}
			if len(v.Secret.Items) == 0 {
				t.Errorf("volume %s: list the Secret's items, so that a missing key stops the pod", v.Name)
			}
			for _, it := range v.Secret.Items {
				files[path.Join(vm.MountPath, it.Path)] = secretFile{v.Secret.SecretName, it.Key}
				if !slices.Contains(secrets[v.Secret.SecretName], it.Key) {
					t.Errorf("volume %s: key %s is not in the Secret %s as docs/kubernetes.md creates it (%v)",
						v.Name, it.Key, v.Secret.SecretName, secrets[v.Secret.SecretName])
				}
			}
		default:
			t.Errorf("volume %s: neither a claim nor a Secret", vm.Name)
		}
	}
	if dataMount != "/data" {
		t.Errorf("the claim is mounted on %q, not the image's volume /data", dataMount)
	}
	state := "fence-state-file"
	if cluster {
		state = "raft-dir"
	}
	if p := set.get(state); p == "" || !strings.HasPrefix(p, dataMount+"/") {
		t.Errorf("--%s %q is not on the claim's volume %s", state, p, dataMount)
	}
	// Every file setting names a Secret's file, and every Secret's file
	// is named by one.
	used := map[string]bool{}
	for flag, spec := range set.specs {
		isFile := strings.HasSuffix(flag, "-file") && flag != "fence-state-file" && flag != "policy-file" ||
			strings.HasPrefix(flag, "raft-tls-") || strings.HasPrefix(flag, "tls-")
		p := set.get(flag)
		if !isFile || !spec.value || p == "" {
			continue
		}
		if _, ok := files[p]; !ok {
			t.Errorf("--%s %s: no mounted Secret item is that file (%v)", flag, p, files)
		}
		used[p] = true
	}
	for p, f := range files {
		if !used[p] {
			t.Errorf("%s (Secret %s key %s) is mounted but no setting reads it", p, f.secret, f.key)
		}
	}
	want := "raft-auth-token-file"
	if got := set.get(want); cluster != (got != "") {
		t.Errorf("--%s %q in a manifest with cluster=%v", want, got, cluster)
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			r := e.ValueFrom.SecretKeyRef
			if !slices.Contains(secrets[r.Name], r.Key) {
				t.Errorf("env %s: key %s is not in the Secret %s as docs/kubernetes.md creates it", e.Name, r.Key, r.Name)
			}
		}
	}
	mounted := map[secretFile]bool{}
	for _, f := range files {
		mounted[f] = true
	}
	for name, keys := range secrets {
		for _, k := range keys {
			if !mounted[secretFile{name, k}] {
				t.Errorf("docs/kubernetes.md puts key %s in the Secret %s; the manifest reads no such file", k, name)
			}
		}
	}
}

// checkPeers: every pod of the StatefulSet is a member, under its pod
// name, at its stable DNS name; a PDB keeps a quorum; the pods start
// together.
func checkPeers(t *testing.T, m *manifest, sts appsv1.StatefulSet, c corev1.Container, set *settings,
	specs map[string]flagSpec) {
	t.Helper()
	n := int(*sts.Spec.Replicas)
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q: a member is ready only once a leader is elected, so pods started one by one wait for each other forever", sts.Spec.PodManagementPolicy)
	}
	if set.get("cluster-bootstrap") != "true" {
		t.Error("no --cluster-bootstrap: nothing creates the cluster")
	}
	_, raftPort, _ := net.SplitHostPort(set.get("raft-addr"))
	for i := range n {
		podName := fmt.Sprintf("%s-%d", sts.Name, i)
		env, err := podEnv(c, podName, "ns")
		if err != nil {
			t.Fatal(err)
		}
		s, err := readSettings(c.Args, env, specs)
		if err != nil {
			t.Fatal(err)
		}
		dns := fmt.Sprintf("%s.%s.ns.svc.%s", podName, sts.Spec.ServiceName, env["CLUSTER_DOMAIN"])
		if got := s.get("node-id"); got != podName {
			t.Errorf("pod %s: --node-id %q", podName, got)
		}
		if got, want := s.get("raft-addr"), net.JoinHostPort(dns, raftPort); got != want {
			t.Errorf("pod %s: --raft-addr %q, want its stable name %q", podName, got, want)
		}
		if h, _, _ := net.SplitHostPort(s.get("raft-bind")); h != "" && h != "0.0.0.0" {
			t.Errorf("pod %s: --raft-bind %q, want the pod's every interface", podName, s.get("raft-bind"))
		}
		peers := strings.Split(s.get("cluster-peers"), ",")
		if len(peers) != n {
			t.Fatalf("--cluster-peers lists %d members, replicas is %d", len(peers), n)
		}
		want := fmt.Sprintf("%s=%s@%s", podName, net.JoinHostPort(dns, raftPort), net.JoinHostPort(dns, s.get("port")))
		if peers[i] != want {
			t.Errorf("--cluster-peers member %d is %q, want %q", i, peers[i], want)
		}
	}
	if len(m.pdbs) != 1 {
		t.Fatalf("%d PodDisruptionBudgets, want 1", len(m.pdbs))
	}
	pdb := m.pdbs[0]
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(sts.Spec.Template.Labels)) {
		t.Errorf("PDB selector %v does not match the members (%v)", pdb.Spec.Selector, err)
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MinAvailable != nil {
		t.Fatalf("PDB: want maxUnavailable alone, so that it follows replicas")
	}
	down, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, n, true)
	if err != nil || down < 1 || n-down < n/2+1 {
		t.Errorf("PDB maxUnavailable %s of %d members: want at least one and a quorum (%d) left (%v)",
			pdb.Spec.MaxUnavailable.String(), n, n/2+1, err)
	}
}

// secretBlock marks the shell block of docs/kubernetes.md that creates a
// Secret for a manifest: <!-- secret: NAME FILE -->.
var secretBlock = regexp.MustCompile("(?s)<!-- secret: ([a-z0-9.-]+) ([a-z0-9.-]+) -->\\s*```sh\n(.*?)```")

// secretKey is a key a kubectl create secret line puts in.
var secretKey = regexp.MustCompile(`--from-(?:literal|file)=([A-Za-z0-9._-]+)=`)

// documentedSecrets reads the Secrets docs/kubernetes.md creates: by
// manifest, each Secret's keys.
func documentedSecrets(file string) (map[string]map[string][]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string][]string{}
	for _, m := range secretBlock.FindAllStringSubmatch(string(b), -1) {
		name, manifest, block := m[1], m[2], m[3]
		if !strings.Contains(block, "kubectl create secret generic "+name+" ") {
			return nil, fmt.Errorf("%s: the block marked for Secret %s does not create it", file, name)
		}
		if out[manifest] == nil {
			out[manifest] = map[string][]string{}
		}
		for _, k := range secretKey.FindAllStringSubmatch(block, -1) {
			out[manifest][name] = append(out[manifest][name], k[1])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no <!-- secret: NAME FILE --> block", file)
	}
	return out, nil
}

// containerfile is what the manifests must agree with in the image's
// Containerfile.
type containerfile struct {
	user    string          // USER uid:gid
	exposes map[string]bool // EXPOSE ports
}

func readContainerfile(file string) (*containerfile, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	cf := &containerfile{exposes: map[string]bool{}}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "USER":
			cf.user = f[1]
		case len(f) > 1 && f[0] == "EXPOSE":
			for _, p := range f[1:] {
				cf.exposes[strings.TrimSuffix(p, "/tcp")] = true
			}
		case len(f) == 2 && f[0] == "VOLUME" && f[1] != "/data":
			return nil, fmt.Errorf("%s: VOLUME %s, the manifests mount /data", file, f[1])
		}
	}
	if cf.user == "" || len(cf.exposes) == 0 {
		return nil, fmt.Errorf("%s: no USER or EXPOSE", file)
	}
	return cf, nil
}
