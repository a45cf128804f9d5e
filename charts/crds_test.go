package charts

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
)

// installCRDFile creates the CRD in file under dir (from the environment
// variable hack/test.sh sets, else what script prints) and waits until it
// is established.
func installCRDFile(t *testing.T, c client.Client, dir, file, script string) {
	t.Helper()
	if dir == "" {
		out, err := exec.Command(filepath.Join("..", script)).Output()
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		dir = strings.TrimSpace(string(out))
	}
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatalf("the upstream CRD (from %s): %v", script, err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if err := c.Create(context.Background(), crd); err != nil {
		t.Fatalf("create %s: %v", crd.GetName(), err)
	}
	waitEstablished(t, c, crd.GetName())
}

func waitEstablished(t *testing.T, c client.Client, name string) {
	t.Helper()
	controllertest.Eventually(t, 30*time.Second, nil, func() (bool, string) {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, cond := range conds {
			m := cond.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, ""
			}
		}
		return false, name + " is not established"
	})
}
