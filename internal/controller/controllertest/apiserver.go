package controllertest

import (
	rbacv1 "k8s.io/api/rbac/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/controller"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// RepoRoot returns the repository root: the first folder above the working
// directory holding the go.mod of module github.com/pxsubstrate/pxsubstrate.
func RepoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// The root's go.mod, not a nested module's (charts/, hack/tools/).
	for dir := wd; ; dir = filepath.Dir(dir) {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/pxsubstrate/pxsubstrate\n") {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatalf("cannot find the repository root above %s", wd)
		}
	}
}

// Scheme is the controller's scheme plus the capmox ProxmoxMachine
// versions as unstructured objects, and RBAC, which tests use to grant a
// scraper its /metrics access.
func Scheme() *runtime.Scheme {
	s := controller.Scheme()
	utilruntime.Must(rbacv1.AddToScheme(s))
	for _, gvk := range network.MachineKinds {
		s.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
		s.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &unstructured.UnstructuredList{})
	}
	return s
}

// StartAPIServer starts kube-apiserver and etcd with the Kube-OVN, capmox
// v0.9, in-cluster IPAM, Cluster API and proxmox.cozystack.io CRDs.
func StartAPIServer(t testing.TB) (*rest.Config, client.Client) {
	t.Helper()
	return testenv.StartAPIServer(t, testenv.APIServerOptions{
		Scheme:       Scheme(),
		UpstreamCRDs: []string{"kube-ovn-v1.15.24", "capmox-v0.9.0"},
		CAPIIPAM:     true,
		CAPI:         true,
		CRDPaths:     []string{filepath.Join(RepoRoot(t), "config", "crd", "bases")},
	})
}
