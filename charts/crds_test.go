package charts

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	controllertest.Create(t, c, crd)
	waitEstablished(t, c, crd.Name)
}

func waitEstablished(t *testing.T, c client.Client, name string) {
	t.Helper()
	controllertest.Eventually(t, 30*time.Second, nil, func() (bool, string) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			return false, err.Error()
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, name + " is not established"
	})
}
