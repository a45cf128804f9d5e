package testenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
)

const (
	assetsHint      = "run hack/test.sh or hack/kube-assets.sh to build them"
	envAssets       = "KUBEBUILDER_ASSETS"
	envCache        = "PXSUBSTRATE_CACHE"
	upstreamCRDsDir = "third_party/crds"
	startTimeout    = 2 * time.Minute
	stopTimeout     = time.Minute
)

// ErrMissingAssets says kube-apiserver, etcd or kubectl cannot be found.
var ErrMissingAssets = errors.New("envtest binaries are missing")

// APIServerOptions says which CRDs StartAPIServer installs. Every field is optional.
type APIServerOptions struct {
	// Scheme is used by the returned client; nil means kube.Scheme().
	Scheme *runtime.Scheme
	// UpstreamCRDs names folders under the repository's third_party/crds,
	// e.g. "capmox-v0.9.0", "kube-ovn-v1.15.24" (third_party/crds/README.md
	// says where each comes from).
	UpstreamCRDs []string
	// CAPI installs the Cluster API core CRDs shipped in CAPIModule.
	CAPI bool
	// CAPIIPAM installs the in-cluster IPAM provider CRDs shipped in CAPIIPAMModule.
	CAPIIPAM bool
	// CRDPaths are more directories or files of CRD manifests, such as this
	// repository's config/crd/bases.
	CRDPaths []string
}

// StartAPIServer starts kube-apiserver and etcd with the CRDs o names,
// stops them when the test ends, and returns a config and a client for them.
// It fails the test when the binaries or a CRD folder are missing.
func StartAPIServer(t testing.TB, o APIServerOptions) (*rest.Config, client.Client) {
	t.Helper()
	env, err := Environment(o)
	if err != nil {
		t.Fatalf("cannot start kube-apiserver: %v", err)
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("cannot start kube-apiserver and etcd from %s: %v", env.BinaryAssetsDirectory, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("cannot stop kube-apiserver and etcd: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("cannot create a client for the test API server: %v", err)
	}
	return cfg, c
}

// Environment is the envtest environment StartAPIServer starts, for a
// TestMain that shares one API server among a package's tests and starts
// and stops it itself.
func Environment(o APIServerOptions) (*envtest.Environment, error) {
	assets, err := FindAssets()
	if err != nil {
		return nil, err
	}
	paths, err := crdPaths(o)
	if err != nil {
		return nil, err
	}
	s := o.Scheme
	if s == nil {
		s = kube.Scheme()
	}
	crds, err := ReadCRDs(paths...)
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		Scheme:                s,
		CRDInstallOptions:     envtest.CRDInstallOptions{CRDs: crds},
	}
	// envtest's 20s defaults are too short on a busy 2-core machine; its
	// own environment variables still win.
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		env.ControlPlaneStartTimeout = startTimeout
	}
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT") == "" {
		env.ControlPlaneStopTimeout = stopTimeout
	}
	return env, nil
}

// ReadCRDs reads the CRDs of paths (folders or files) as envtest reads
// them when it installs CRDs from paths, a missing path an error, once per
// test binary (CachedCRDs).
func ReadCRDs(paths ...string) ([]*apiextv1.CustomResourceDefinition, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	return CachedCRDs("envtest\x00"+strings.Join(paths, "\x00"), func() ([]*apiextv1.CustomResourceDefinition, error) {
		o := envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}
		if err := envtest.ReadCRDFiles(&o); err != nil {
			return nil, fmt.Errorf("cannot read the CRDs of %s: %w", strings.Join(paths, ", "), err)
		}
		return o.CRDs, nil
	})
}

// CachedCRDs returns the CRDs read returns, calling read once per test
// binary for key: the Cluster API CRDs alone are megabytes of YAML, and a
// package's tests start API servers with the same CRDs many times. Each
// call returns copies of its own, which the caller may change (installing
// a CRD fills in its metadata).
func CachedCRDs(key string, read func() ([]*apiextv1.CustomResourceDefinition, error)) ([]*apiextv1.CustomResourceDefinition, error) {
	v, _ := crdsRead.LoadOrStore(key, sync.OnceValues(read))
	crds, err := v.(func() ([]*apiextv1.CustomResourceDefinition, error))()
	if err != nil {
		return nil, err
	}
	out := make([]*apiextv1.CustomResourceDefinition, len(crds))
	for i, c := range crds {
		out[i] = c.DeepCopy()
	}
	return out, nil
}

var crdsRead sync.Map // key -> func() ([]*CRD, error)

// kubeAssets are kube-apiserver, etcd, kubectl, kube-controller-manager
// and kube-scheduler as hack/kube-assets.sh builds them.
var kubeAssets = Assets{Env: envAssets, Missing: ErrMissingAssets, Hint: assetsHint}

// FindAssets returns the folder holding kube-apiserver and etcd:
// $KUBEBUILDER_ASSETS when set, else the cache folder hack/kube-assets.sh
// builds into.
func FindAssets() (string, error) {
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := findBinary(bin); err != nil {
			return "", err
		}
	}
	return kubeAssets.withDefault().Dir(), nil
}

// FindKubectl returns the kubectl that hack/kube-assets.sh builds next to
// kube-apiserver and etcd, for tests that run the rendered scripts against
// the test API server.
func FindKubectl() (string, error) { return findBinary("kubectl") }

// FindControllerManager returns the kube-controller-manager that
// hack/kube-assets.sh builds next to kube-apiserver and etcd: the lab runs
// its garbage collector, which envtest does not have.
func FindControllerManager() (string, error) { return findBinary("kube-controller-manager") }

// FindScheduler returns the kube-scheduler that hack/kube-assets.sh builds
// next to kube-apiserver: the lab runs it against the tenant API server,
// as a tenant's control plane does, so that a Pod with a volume is placed.
func FindScheduler() (string, error) { return findBinary("kube-scheduler") }

func findBinary(name string) (string, error) { return kubeAssets.withDefault().Binary(name) }

// withDefault is a with its default folder, which depends on the cache
// root of the moment (PXSUBSTRATE_CACHE).
func (a Assets) withDefault() Assets {
	if a.Default == "" {
		a.Default = DefaultAssetsDir()
	}
	return a
}

// DefaultAssetsDir is where hack/kube-assets.sh puts the binaries:
// ${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}/kube/<kube>-etcd<etcd>.
func DefaultAssetsDir() string {
	return filepath.Join(CacheRoot(), "kube", KubeVersion+"-etcd"+EtcdVersion)
}

// CacheRoot is the folder the hack/*-assets.sh scripts build into:
// ${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}.
func CacheRoot() string {
	if root := os.Getenv(envCache); root != "" {
		return root
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "pxsubstrate")
}

func crdPaths(o APIServerOptions) ([]string, error) {
	var paths []string
	for _, name := range o.UpstreamCRDs {
		p, err := UpstreamCRDDir(name)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	if o.CAPI {
		p, err := ModuleCRDDir(CAPIModule)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	if o.CAPIIPAM {
		p, err := ModuleCRDDir(CAPIIPAMModule)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return append(paths, o.CRDPaths...), nil
}

// UpstreamCRDDir returns the folder third_party/crds/<name> of this
// repository, found by walking up from the working directory to the go.mod of
// this module, so that it works from any package's tests and from a clone
// placed anywhere.
func UpstreamCRDDir(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, upstreamCRDsDir, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("cannot find the upstream CRD set %q: %w (the folders are listed in %s/README.md)",
			name, err, upstreamCRDsDir)
	}
	return p, nil
}

// RepoRoot returns the folder of this module's go.mod, the first one found
// walking up from the working directory.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("cannot find the repository root: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(data, []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("cannot find the repository root: no go.mod of %s above %s", modulePath, wd)
		}
	}
}

// modulePath is this repository's module.
const modulePath = "github.com/pxsubstrate/pxsubstrate"

var moduleDirs sync.Map // module@version -> string

// ModuleCRDDir returns the CRD folder (config/crd/bases, or core/config/crd/bases
// for newer Cluster API releases) inside the source of module@version, which
// `go mod download` fetches into the module cache when needed.
func ModuleCRDDir(moduleAtVersion string) (string, error) {
	if d, ok := moduleDirs.Load(moduleAtVersion); ok {
		return d.(string), nil
	}
	dir, err := moduleDir(moduleAtVersion)
	if err != nil {
		return "", err
	}
	for _, sub := range []string{"config/crd/bases", "core/config/crd/bases"} {
		p := filepath.Join(dir, sub)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			moduleDirs.Store(moduleAtVersion, p)
			return p, nil
		}
	}
	return "", fmt.Errorf("cannot find CRDs of %s: no config/crd/bases in %s", moduleAtVersion, dir)
}

// ModuleDir returns the source folder of module@version in the module
// cache, which `go mod download` fetches when needed, for tests that read
// manifests a module ships outside config/crd/bases.
func ModuleDir(moduleAtVersion string) (string, error) { return moduleDir(moduleAtVersion) }

func moduleDir(moduleAtVersion string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", moduleAtVersion)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GO111MODULE=on")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr == nil && info.Error != "" {
		return "", fmt.Errorf("cannot download %s: %s", moduleAtVersion, info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("cannot download %s: %w: %s", moduleAtVersion, err, stderr.String())
	}
	if info.Dir == "" {
		return "", fmt.Errorf("cannot download %s: go mod download gave no folder", moduleAtVersion)
	}
	return info.Dir, nil
}

// StartFor runs start for one test: it fails t when start fails and stops
// what it started when t ends, failing t if the stop does.
func StartFor[T interface{ Stop() error }](t testing.TB, start func() (T, error)) T {
	t.Helper()
	v, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := v.Stop(); err != nil {
			t.Error(err)
		}
	})
	return v
}
