package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/internal/testserver"
	pkgversion "github.com/dflockd-ng/dflockd/version"
)

// imageConfig is what a deployment depends on of the image's
// configuration, as podman image inspect --format json shows it.
type imageConfig struct {
	Config struct {
		User         string
		Entrypoint   []string
		Cmd          []string
		Env          []string
		ExposedPorts map[string]struct{}
		Volumes      map[string]struct{}
		WorkingDir   string
		StopSignal   string
	}
	Labels      map[string]string
	HealthCheck *struct {
		Test     []string
		Interval time.Duration
		Timeout  time.Duration
		Retries  int
	}
}

// The server image (dist/container/Containerfile, built by
// scripts/container.sh from the release binary) as CI checks it: its
// configuration (user, entrypoint, command, environment, ports, volume,
// health check, labels), its files (the binary, /data owned by the
// user), and the binary taken out of it, which serves and answers its
// own health probe. Containers cannot run on the CI machines (crun cannot
// set their limits), so the image is read with podman save, which needs
// no container at all, and its binary runs here.
//
// Opt-in (DFLOCKD_CONTAINER_TEST=1, as .ci/run sets): it needs podman and
// takes some seconds. It uses the release binaries of DFLOCKD_RELEASE_DIR
// and DFLOCKD_RELEASE_VERSION when set (CI builds them first), else builds
// them with scripts/release.sh.
func TestContainerImage(t *testing.T) {
	if os.Getenv("DFLOCKD_CONTAINER_TEST") == "" {
		t.Skip("DFLOCKD_CONTAINER_TEST unset: the image is built and checked only when asked (.ci/run asks)")
	}
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("podman not installed: the image is not built (.ci/run installs Debian's podman)")
	}
	if out, err := podmanBuildsScratch(t, podman); err != nil {
		// One line, podman's last: CI's filter shows the reason's line.
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.Skipf("podman cannot build an image here (%v: %s): the image is not checked", err, lines[len(lines)-1])
	}

	dir, version := os.Getenv("DFLOCKD_RELEASE_DIR"), os.Getenv("DFLOCKD_RELEASE_VERSION")
	if dir == "" || version == "" {
		dir, version = t.TempDir(), "container-test"
		if out, err := exec.Command("../../scripts/release.sh", version, dir).CombinedOutput(); err != nil {
			t.Fatalf("scripts/release.sh: %v\n%s", err, out)
		}
	}
	image := fmt.Sprintf("localhost/dflockd-ng-test:%d", time.Now().UnixNano())
	build := exec.Command("../../scripts/container.sh", version, dir)
	build.Env = append(os.Environ(), "IMAGE="+image)
	out, err := build.CombinedOutput()
	t.Cleanup(func() { exec.Command(podman, "rmi", "--force", image).Run() })
	if err != nil || strings.TrimSpace(string(out)) != image {
		t.Fatalf("scripts/container.sh: %v\n%s", err, out)
	}
	revision, _ := exec.Command("git", "rev-parse", "HEAD").Output()

	t.Run("config", func(t *testing.T) {
		raw, err := exec.Command(podman, "image", "inspect", "--format", "json", image).Output()
		if err != nil {
			t.Fatalf("podman image inspect: %v", err)
		}
		var cfgs []imageConfig
		if err := json.Unmarshal(raw, &cfgs); err != nil || len(cfgs) != 1 {
			t.Fatalf("podman image inspect: %v (%d images)\n%s", err, len(cfgs), raw)
		}
		checkImageConfig(t, &cfgs[0], version, strings.TrimSpace(string(revision)))
	})

	bin := filepath.Join(t.TempDir(), "dflockd")
	t.Run("files", func(t *testing.T) {
		archive := filepath.Join(t.TempDir(), "image.tar")
		if out, err := exec.Command(podman, "save", "--quiet", "--format", "docker-archive", "-o", archive, image).CombinedOutput(); err != nil {
			t.Fatalf("podman save: %v\n%s", err, out)
		}
		checkImageFiles(t, archive, bin)
	})
	if t.Failed() {
		return
	}

	t.Run("binary", func(t *testing.T) {
		out, err := exitingCommand(t, bin, "--version").CombinedOutput()
		if want := releaseVersionPrefix(version); err != nil || !strings.HasPrefix(string(out), want) {
			t.Fatalf("the image's dflockd --version: %v %q, want it to start %q", err, out, want)
		}
		t.Logf("the image's binary: %s", strings.TrimSpace(string(out)))

		// Served as the image serves: DFLOCKD_HOST=0.0.0.0 is the image's,
		// but here the server keeps to loopback; the probe, run as the
		// HEALTHCHECK runs it, reads the image's value.
		addr := freeAddr(t)
		_, port, _ := net.SplitHostPort(addr)
		srv := exec.Command(bin, "--host", "127.0.0.1")
		srv.Env = []string{"DFLOCKD_PORT=" + port}
		proc := testserver.Spawn(t, srv)
		waitFor(t, "the image's binary to say listening", func() bool { return strings.Contains(proc.Out.String(), "listening") })
		probe := func() (int, string) {
			cmd := exitingCommand(t, bin, "health")
			cmd.Env = []string{"DFLOCKD_HOST=0.0.0.0", "DFLOCKD_PORT=" + port}
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return ee.ExitCode(), string(out)
			} else if err != nil {
				t.Fatal(err)
			}
			return 0, string(out)
		}
		code, out2 := probe()
		if code != 0 || !strings.HasPrefix(out2, "healthy: 127.0.0.1:"+port+" answered ping in ") {
			t.Fatalf("the image's health probe against its server: exit %d %q, want 0 and healthy", code, out2)
		}
		t.Logf("health, serving: exit %d: %s", code, strings.TrimSpace(out2))
		srv.Process.Kill()
		<-proc.Done()
		code, out2 = probe()
		if code != 1 || !strings.HasPrefix(out2, "unhealthy: 127.0.0.1:"+port+": ") {
			t.Fatalf("the image's health probe, its server gone: exit %d %q, want 1 and unhealthy", code, out2)
		}
		t.Logf("health, server gone: exit %d: %s", code, strings.TrimSpace(out2))
	})
}

// podmanBuildsScratch reports whether podman can build here at all: the
// smallest image there is, FROM scratch and a label.
func podmanBuildsScratch(t *testing.T, podman string) ([]byte, error) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Containerfile"), []byte("FROM scratch\nLABEL probe=1\n"), 0o644)
	image := fmt.Sprintf("localhost/dflockd-ng-probe:%d", time.Now().UnixNano())
	out, err := exec.Command(podman, "build", "--quiet", "--layers=false", "-t", image, dir).CombinedOutput()
	exec.Command(podman, "rmi", "--force", image).Run()
	return out, err
}

func checkImageConfig(t *testing.T, c *imageConfig, version, revision string) {
	t.Helper()
	if c.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (numeric, not root)", c.Config.User)
	}
	if !slices.Equal(c.Config.Entrypoint, []string{"/dflockd"}) || len(c.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q, cmd %q; want [/dflockd] and none (the arguments are flags)", c.Config.Entrypoint, c.Config.Cmd)
	}
	if !slices.Contains(c.Config.Env, "DFLOCKD_HOST=0.0.0.0") {
		t.Errorf("env %q lacks DFLOCKD_HOST=0.0.0.0: a published port would reach nothing", c.Config.Env)
	}
	for _, p := range []string{"6388/tcp", "6389/tcp"} {
		if _, ok := c.Config.ExposedPorts[p]; !ok {
			t.Errorf("ports %v lack %s", c.Config.ExposedPorts, p)
		}
	}
	if _, ok := c.Config.Volumes["/data"]; !ok || len(c.Config.Volumes) != 1 {
		t.Errorf("volumes %v, want /data alone", c.Config.Volumes)
	}
	if c.Config.WorkingDir != "/data" || c.Config.StopSignal != "SIGTERM" {
		t.Errorf("working directory %q, stop signal %q; want /data and SIGTERM", c.Config.WorkingDir, c.Config.StopSignal)
	}
	switch hc := c.HealthCheck; {
	case hc == nil:
		t.Errorf("no health check (built in the OCI format?)")
	case !slices.Equal(hc.Test, []string{"CMD", "/dflockd", "health"}):
		t.Errorf("health check %q, want CMD /dflockd health (exec form: there is no shell)", hc.Test)
	case hc.Timeout <= healthDefaultTimeout:
		// The probe must give up, with its reason, before it is killed.
		t.Errorf("health check timeout %v, want more than the probe's own %v", hc.Timeout, healthDefaultTimeout)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source":   "https://github.com/dflockd-ng/dflockd",
		"org.opencontainers.image.title":    "dflockd-ng",
		"org.opencontainers.image.licenses": "MIT",
	} {
		if got := c.Labels[k]; got != want || want == "" {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
}

// checkImageFiles reads the layers of a docker-archive: the image holds
// /dflockd (root's, executable) and /data (the user's, private) and
// nothing else; the binary is written to bin.
func checkImageFiles(t *testing.T, archive, bin string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The archive: manifest.json naming the layers, each a tar in it.
	members := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			members[h.Name] = b
		}
	}
	var manifest []struct{ Layers []string }
	if err := json.Unmarshal(members["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %v %q", err, members["manifest.json"])
	}
	var files []string
	for _, layer := range manifest[0].Layers {
		lr := tar.NewReader(bytes.NewReader(members[layer]))
		for {
			h, err := lr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("layer %s: %v", layer, err)
			}
			name := "/" + path.Clean(h.Name)
			files = append(files, name)
			owner := strconv.Itoa(h.Uid) + ":" + strconv.Itoa(h.Gid)
			switch name {
			case "/dflockd":
				if h.Typeflag != tar.TypeReg || owner != "0:0" || h.Mode&0o777 != 0o755 {
					t.Errorf("/dflockd: type %c, owner %s, mode %o; want a file, 0:0, 755", h.Typeflag, owner, h.Mode&0o777)
				}
				b, _ := io.ReadAll(lr)
				if err := os.WriteFile(bin, b, 0o755); err != nil {
					t.Fatal(err)
				}
			case "/data":
				if h.Typeflag != tar.TypeDir || owner != "65532:65532" || h.Mode&0o777 != 0o700 {
					t.Errorf("/data: type %c, owner %s, mode %o; want a directory, 65532:65532, 700", h.Typeflag, owner, h.Mode&0o777)
				}
			}
		}
	}
	slices.Sort(files)
	if !slices.Equal(files, []string{"/data", "/dflockd"}) {
		t.Errorf("the image's files %q, want /data and /dflockd alone", files)
	}
	size := 0
	for _, l := range manifest[0].Layers {
		size += len(members[l])
	}
	t.Logf("the image's files: %q, in %d layers of %d bytes", files, len(manifest[0].Layers), size)
}

// releaseVersionPrefix is how --version starts for a release build that
// scripts/release.sh labelled label: the release number, with the label
// as semver build metadata unless it is the number itself (package
// version's String).
func releaseVersionPrefix(label string) string {
	if strings.TrimPrefix(label, "v") == pkgversion.Number {
		return "dflockd-ng " + pkgversion.Number + " "
	}
	return "dflockd-ng " + pkgversion.Number + "+" + label + " "
}
