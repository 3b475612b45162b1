package kubernetes

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// flagSpec is one server flag as docs/configuration.md's flags block (which a test of
// cmd/dflockd keeps identical to dflockd --help) lists it.
type flagSpec struct {
	env   string // its DFLOCKD_* twin, "" for none
	value bool   // takes a value (--flag=VALUE), else a boolean
}

// flagRow is a row of the flags block: "  --name ARG   DFLOCKD_NAME   default".
var flagRow = regexp.MustCompile(`^  (?:-h, )?--([a-z0-9-]+)( [A-Z]+)?\s+(DFLOCKD_[A-Z0-9_]+|-)\s`)

// serverFlags reads the server's flags from docs/configuration.md.
func serverFlags() (map[string]flagSpec, error) {
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		return nil, err
	}
	s := string(b)
	begin, end := strings.Index(s, "<!-- flags:begin -->"), strings.Index(s, "<!-- flags:end -->")
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("docs/configuration.md: no flags block")
	}
	flags := map[string]flagSpec{}
	for _, line := range strings.Split(s[begin:end], "\n") {
		if m := flagRow.FindStringSubmatch(line); m != nil {
			f := flagSpec{value: m[2] != ""}
			if m[3] != "-" {
				f.env = m[3]
			}
			flags[m[1]] = f
		}
	}
	if len(flags) < 50 {
		return nil, fmt.Errorf("docs/configuration.md: only %d flags read from the flags block", len(flags))
	}
	return flags, nil
}

// expand replaces $(VAR) with env's VAR as Kubernetes does in a
// container's args and env values: $$ is a literal $, and a reference to
// a variable not defined is left as written.
func expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			if j := strings.IndexByte(s[i:], ')'); j > 0 {
				if v, ok := env[s[i+2:i+j]]; ok {
					b.WriteString(v)
					i += j
					continue
				}
			}
			b.WriteByte('$')
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// podEnv is a container's environment in pod podName of namespace ns, as
// the kubelet makes it: values expanded in order (a value sees the
// variables above it), the downward API's fields filled in.
func podEnv(c corev1.Container, podName, ns string) (map[string]string, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expand(e.Value, env)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = podName
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = ns
		default:
			return nil, fmt.Errorf("env %s: a source this test does not fill in", e.Name)
		}
	}
	return env, nil
}

// settings is what the server reads: its command line, then DFLOCKD_*.
type settings struct {
	flags map[string]string // --name=value; a boolean's value is "true"
	env   map[string]string
	specs map[string]flagSpec
}

// readSettings parses a container's args (expanded with env) against
// the server's flags: each is --name=value or a bare boolean --name, so
// that a value is never taken for a flag or the reverse.
func readSettings(args []string, env map[string]string, specs map[string]flagSpec) (*settings, error) {
	s := &settings{flags: map[string]string{}, env: env, specs: specs}
	for _, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		spec, ok := specs[name]
		switch {
		case !strings.HasPrefix(a, "--") || !ok:
			return nil, fmt.Errorf("arg %q: not a flag of the server", a)
		case spec.value && !hasValue:
			return nil, fmt.Errorf("arg %q: write it --%s=VALUE", a, name)
		case !hasValue:
			value = "true"
		}
		if _, dup := s.flags[name]; dup {
			return nil, fmt.Errorf("arg %q: given twice", a)
		}
		s.flags[name] = expand(value, env)
	}
	known := map[string]bool{}
	for _, f := range specs {
		if f.env != "" {
			known[f.env] = true
		}
	}
	for k := range env {
		if strings.HasPrefix(k, "DFLOCKD_") && !known[k] {
			return nil, fmt.Errorf("env %s: not a variable of the server", k)
		}
	}
	return s, nil
}

// get is a setting as the server resolves it: the flag beats its
// variable; an empty variable counts as unset.
func (s *settings) get(flag string) string {
	if v, ok := s.flags[flag]; ok {
		return v
	}
	return s.env[s.specs[flag].env]
}

// portByName is a reference to a container port by its name.
func portByName(name string) intstr.IntOrString { return intstr.FromString(name) }
