package capitest_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
)

// server is one API server with Cluster API core running, for one capmox
// generation (the two define the same CRD names).
type server struct {
	cfg *rest.Config
	c   client.Client
}

var servers = map[capmoxrender.Capmox]*server{}

// capmoxCRDs says where each generation's CRDs come from and the contract
// labels capmox's config/crd/kustomization.yaml (commonLabels) gives them
// at that tag; Cluster API reads them to pick a referenced template's
// version. v0.9.0's are the module's own (testenv.CapmoxModule), installed
// without the conversion webhook, as no capmox manager runs here and only
// v1alpha2 objects are made; v0.7 keeps the copy of v0.7.7, the release
// Cozystack runs (the module proxy serves v0.7.2, whose CRDs have the same
// fields with fewer limits: docs/cluster-api.md).
var capmoxCRDs = map[capmoxrender.Capmox]struct {
	dir    func() (string, error)
	labels map[string]string
}{
	capmoxrender.CapmoxV07: {
		func() (string, error) { return testenv.UpstreamCRDDir("capmox-v0.7.7") },
		map[string]string{"cluster.x-k8s.io/v1beta1": "v1alpha1"},
	},
	capmoxrender.CapmoxV08: {
		func() (string, error) { return testenv.ModuleCRDDir(testenv.CapmoxModule) },
		map[string]string{"cluster.x-k8s.io/v1beta1": "v1alpha2", "cluster.x-k8s.io/v1beta2": "v1alpha2"},
	},
}

// standIns are the CRDs of the providers the module proxy does not serve,
// with the contract label each provider's release carries.
func standIns() []*apiextv1.CustomResourceDefinition {
	return []*apiextv1.CustomResourceDefinition{
		capi.StandInCRD("controlplane.cluster.x-k8s.io", "v1alpha1", "KamajiControlPlane", "v1beta1"),
		capi.StandInCRD("helm.toolkit.fluxcd.io", "v2", "HelmRelease"),
	}
}

// TestMain starts one API server with the managers of Cluster API core and
// of the Talos bootstrap provider per capmox generation, both at once,
// shared by every test of the package.
func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		errs  []error
		stops []func() error
	)
	for gen := range capmoxCRDs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, stop, err := start(gen)
			mu.Lock()
			defer mu.Unlock()
			stops = append(stops, stop...)
			if err != nil {
				errs = append(errs, fmt.Errorf("capmox %s: %w", gen, err))
				return
			}
			servers[gen] = s
		}()
	}
	wg.Wait()
	code := 1
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	for i := len(stops) - 1; i >= 0; i-- {
		if err := stops[i](); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// start starts the API server and managers of gen; stop holds what must be
// stopped, in start order, even when err is set.
func start(gen capmoxrender.Capmox) (s *server, stop []func() error, err error) {
	env, err := testenv.Environment(testenv.APIServerOptions{})
	if err != nil {
		return nil, nil, err
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, err
	}
	stop = append(stop, env.Stop)
	crds, err := capmoxCRDsOf(gen)
	if err != nil {
		return nil, stop, err
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: append(crds, standIns()...)}); err != nil {
		return nil, stop, err
	}
	mgrs, err := capi.Start(cfg, capi.Options{CAPI: true, CABPT: true})
	if err != nil {
		return nil, stop, err
	}
	stop = append(stop, mgrs.Stop)
	fast := rest.CopyConfig(cfg)
	fast.QPS, fast.Burst = 200, 400
	c, err := client.New(fast, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		return nil, stop, err
	}
	return &server{cfg: cfg, c: c}, stop, nil
}

// capmoxCRDsOf reads the capmox CRDs of gen and labels them.
func capmoxCRDsOf(gen capmoxrender.Capmox) ([]*apiextv1.CustomResourceDefinition, error) {
	set := capmoxCRDs[gen]
	dir, err := set.dir()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s", dir)
	}
	var out []*apiextv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if crd.Labels == nil {
			crd.Labels = map[string]string{}
		}
		for k, v := range set.labels {
			crd.Labels[k] = v
		}
		out = append(out, crd)
	}
	return out, nil
}
