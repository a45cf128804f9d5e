package testenv_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// TestStartAPIServer starts a real kube-apiserver with a shared CRD set and
// the CRDs of the Cluster API and in-cluster IPAM modules, and checks that
// they are served and that the built-in coordination API works.
func TestStartAPIServer(t *testing.T) {
	s := kube.Scheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	_, c := testenv.StartAPIServer(t, testenv.APIServerOptions{
		Scheme:       s,
		UpstreamCRDs: []string{"capmox-v0.9.0"},
		CAPI:         true,
		CAPIIPAM:     true,
	})
	ctx := context.Background()
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, crds); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, crd := range crds.Items {
		served[crd.Name] = true
	}
	for _, want := range []string{
		"proxmoxclusters.infrastructure.cluster.x-k8s.io",
		"clusters.cluster.x-k8s.io",
		"machinedeployments.cluster.x-k8s.io",
		"inclusterippools.ipam.cluster.x-k8s.io",
	} {
		if !served[want] {
			t.Errorf("CRD %s is not installed", want)
		}
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "l"}}
	if err := c.Create(ctx, lease); err != nil {
		t.Fatalf("cannot create a Lease: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(lease), &coordinationv1.Lease{}); err != nil {
		t.Fatalf("cannot read the Lease back: %v", err)
	}
}

func TestFindAssets(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("KUBEBUILDER_ASSETS", empty)
	_, err := testenv.FindAssets()
	if !errors.Is(err, testenv.ErrMissingAssets) || !strings.Contains(err.Error(), "run hack/test.sh or hack/kube-assets.sh to build them") ||
		!strings.Contains(err.Error(), empty) {
		t.Errorf("FindAssets() with an empty folder = %v; want ErrMissingAssets naming the folder and how to build", err)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if err := os.WriteFile(filepath.Join(empty, bin), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if dir, err := testenv.FindAssets(); err != nil || dir != empty {
		t.Errorf("FindAssets() = %q, %v; want %q", dir, err, empty)
	}
	if _, err := testenv.FindKubectl(); !errors.Is(err, testenv.ErrMissingAssets) || !strings.Contains(err.Error(), "no executable "+filepath.Join(empty, "kubectl")) {
		t.Errorf("FindKubectl() without kubectl = %v; want ErrMissingAssets naming kubectl and the folder", err)
	}
	kubectl := filepath.Join(empty, "kubectl")
	if err := os.WriteFile(kubectl, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := testenv.FindKubectl(); err != nil || got != kubectl {
		t.Errorf("FindKubectl() = %q, %v; want %q", got, err, kubectl)
	}
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("PXSUBSTRATE_CACHE", "/cache-root")
	if got, want := testenv.DefaultAssetsDir(), "/cache-root/kube/1.37.2-etcd3.7.3"; got != want {
		t.Errorf("DefaultAssetsDir() = %q, want %q", got, want)
	}
	t.Setenv("PXSUBSTRATE_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if got, want := testenv.DefaultAssetsDir(), "/xdg/pxsubstrate/kube/1.37.2-etcd3.7.3"; got != want {
		t.Errorf("DefaultAssetsDir() = %q, want %q", got, want)
	}
}

func TestUpstreamCRDDir(t *testing.T) {
	for _, name := range []string{"capmox-v0.7.7", "capmox-v0.9.0", "kube-ovn-v1.15.24"} {
		dir, err := testenv.UpstreamCRDDir(name)
		if err != nil {
			t.Fatalf("UpstreamCRDDir(%q): %v", name, err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if len(files) == 0 {
			t.Errorf("UpstreamCRDDir(%q) = %q holds no YAML", name, dir)
		}
	}
	_, err := testenv.UpstreamCRDDir("capmox-v0.0.0")
	if err == nil || !strings.Contains(err.Error(), `"capmox-v0.0.0"`) || !strings.Contains(err.Error(), "third_party/crds/README.md") {
		t.Errorf("UpstreamCRDDir of a missing set: %v, want an error naming the set and the README", err)
	}
}

// TestReadCRDs: the CRDs of a folder are those envtest reads from it; a
// second read gives the same CRDs as copies of its own, so that installing
// one (which fills in its metadata) leaves the next read untouched; a
// missing path is an error naming it.
func TestReadCRDs(t *testing.T) {
	dir, err := testenv.UpstreamCRDDir("capmox-v0.9.0")
	if err != nil {
		t.Fatal(err)
	}
	want := envtest.CRDInstallOptions{Paths: []string{dir}}
	if err := envtest.ReadCRDFiles(&want); err != nil {
		t.Fatal(err)
	}
	first, err := testenv.ReadCRDs(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := func(crds []*apiextensionsv1.CustomResourceDefinition) []string {
		var out []string
		for _, c := range crds {
			out = append(out, c.Name)
		}
		slices.Sort(out)
		return out
	}
	if len(first) == 0 || !slices.Equal(names(first), names(want.CRDs)) {
		t.Fatalf("ReadCRDs(%s) = %v, envtest reads %v", dir, names(first), names(want.CRDs))
	}
	first[0].ResourceVersion = "7"
	first[0].Spec.Versions = nil
	second, err := testenv.ReadCRDs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range second {
		if c.ResourceVersion != "" || len(c.Spec.Versions) == 0 {
			t.Errorf("CRD %s of the second read holds what the first read's copy was given", c.Name)
		}
	}
	missing := filepath.Join(t.TempDir(), "none")
	if _, err := testenv.ReadCRDs(dir, missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("ReadCRDs with a missing path: %v, want an error naming it", err)
	}
}

// TestRepoRootFromElsewhere runs in a copy of this module's go.mod placed in
// a folder with nothing beside it, as a clone anywhere would be.
func TestRepoRootFromElsewhere(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	clone := t.TempDir()
	sub := filepath.Join(clone, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "go.mod"), mod, 0o644); err != nil {
		t.Fatal(err)
	}
	// A nested module of another path does not stop the walk.
	if err := os.WriteFile(filepath.Join(clone, "a", "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	if got, err := testenv.RepoRoot(); err != nil || got != clone {
		t.Errorf("RepoRoot() from %s = %q, %v; want %q", sub, got, err, clone)
	}
}

func TestModuleCRDDir(t *testing.T) {
	for _, m := range []string{testenv.CAPIModule, testenv.CAPIIPAMModule} {
		dir, err := testenv.ModuleCRDDir(m)
		if err != nil {
			t.Fatalf("ModuleCRDDir(%s): %v", m, err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if len(files) == 0 {
			t.Errorf("ModuleCRDDir(%s) = %s holds no YAML", m, dir)
		}
	}
	if _, err := testenv.ModuleCRDDir("sigs.k8s.io/cluster-api@v0.0.0-no-such"); err == nil {
		t.Error("ModuleCRDDir of a missing version must fail")
	}
}
