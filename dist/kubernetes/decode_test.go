package kubernetes

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// manifest is one file's objects, decoded into the API types Kubernetes
// itself uses.
type manifest struct {
	file     string
	services []corev1.Service
	sets     []appsv1.StatefulSet
	pdbs     []policyv1.PodDisruptionBudget
}

// docSeparator splits a multi-document YAML file.
var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeManifest reads file strictly: a field the API type does not have
// (a misspelling, a field at the wrong level) or given twice fails, where
// kubectl apply would drop it, or refuse it, only on a live cluster.
func decodeManifest(file string) (*manifest, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	m := &manifest{file: file}
	for i, doc := range docSeparator.Split(string(b), -1) {
		if onlyComments(doc) {
			continue
		}
		if err := m.decode([]byte(doc)); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
	}
	return m, nil
}

// decode adds one document to m, by its apiVersion and kind.
func (m *manifest) decode(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Service":
		var s corev1.Service
		if err := yaml.UnmarshalStrict(doc, &s); err != nil {
			return err
		}
		m.services = append(m.services, s)
	case "apps/v1 StatefulSet":
		var s appsv1.StatefulSet
		if err := yaml.UnmarshalStrict(doc, &s); err != nil {
			return err
		}
		m.sets = append(m.sets, s)
	case "policy/v1 PodDisruptionBudget":
		var p policyv1.PodDisruptionBudget
		if err := yaml.UnmarshalStrict(doc, &p); err != nil {
			return err
		}
		m.pdbs = append(m.pdbs, p)
	default:
		return fmt.Errorf("unexpected kind %q of apiVersion %q", tm.Kind, tm.APIVersion)
	}
	return nil
}

func onlyComments(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// TestDecodeIsStrict: the decoder the manifest tests rely on refuses what
// the API types lack, so a typo in a manifest cannot pass unseen.
func TestDecodeIsStrict(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field": "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  replicass: 3\n",
		"wrong level":   "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nclusterIP: None\n",
		"duplicate":     "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  clusterIP: None\n  clusterIP: None\n",
		"unknown kind":  "apiVersion: apps/v1\nkind: Deployement\nmetadata: {name: x}\n",
		"wrong type":    "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  replicas: three\n",
	} {
		if err := new(manifest).decode([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without an error:\n%s", name, doc)
		}
	}
	ok := "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  clusterIP: None\n"
	if err := new(manifest).decode([]byte(ok)); err != nil {
		t.Errorf("a valid Service: %v", err)
	}
}
