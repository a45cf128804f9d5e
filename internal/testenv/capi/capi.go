package capi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pki"
	"github.com/pxsubstrate/pxsubstrate/testproc"
)

const (
	envAssets    = "PXSUBSTRATE_CAPI_ASSETS"
	assetsHint   = "run hack/test.sh or hack/capi-assets.sh to build them"
	readyTimeout = 3 * time.Minute
)

// ErrMissingAssets says a manager binary cannot be found.
var ErrMissingAssets = errors.New("Cluster API manager binaries are missing")

// Options says which managers Start runs. At least one must be set.
type Options struct {
	// CAPI runs Cluster API core's manager (every core controller and
	// webhook, and the conversion of cluster.x-k8s.io, ipam.cluster.x-k8s.io
	// v1beta1 to v1beta2) after installing its CRDs.
	CAPI bool
	// IPAM runs the in-cluster IPAM provider's manager (InClusterIPPool and
	// GlobalInClusterIPPool, their webhooks, and the controller that answers
	// IPAddressClaims) after installing its CRDs. The claims' CRDs belong to
	// Cluster API core: install them with testenv.APIServerOptions.CAPI or
	// set CAPI too.
	IPAM bool
	// CABPT runs the Talos bootstrap provider's manager (the TalosConfig
	// controller, the TalosConfig and TalosConfigTemplate webhooks and
	// their conversion) after installing its CRDs. It needs Cluster API
	// core's CRDs, as IPAM does.
	CABPT bool
	// Capmox runs the manager of that capmox generation after installing
	// its CRDs; empty runs none. It needs the CRDs of Cluster API core and
	// of the IPAM provider (testenv.APIServerOptions.CAPI and CAPIIPAM, or
	// CAPI and IPAM here). capmox serves its webhooks on port 9443 of every
	// address, which it cannot be told otherwise, so it runs in a network
	// namespace of its own (see isolated), reaching the API server and the
	// addresses of CapmoxReaches; where the test process may not make one
	// (not root, not Linux), one capmox manager runs on the machine at a
	// time: Start waits for the port's lock (a file of the temporary
	// folder) that an earlier one holds until Stop. It never sees the test
	// process's PROXMOX_* variables, so clusters reach Proxmox with their
	// own credentialsRef Secret.
	Capmox Capmox
	// CapmoxReaches are the addresses (host:port of 127.0.0.1) capmox must
	// reach besides the API server: the Proxmox VE API its clusters' URLs
	// name. In its network namespace only these and the API server are
	// there.
	CapmoxReaches []string
	// ports picks the managers' ports; nil means a free port of 127.0.0.1.
	ports func() (int, error)
	// assets is the assets root; empty means FindAssets.
	assets string
}

// Managers are the running managers.
type Managers struct {
	// CAPI, IPAM, CABPT and Capmox are nil when not started.
	CAPI, IPAM, CABPT, Capmox *Manager
	dir                       string
}

// Start installs the CRDs and webhook configurations of the managers o asks
// for on the API server of cfg and starts them with an administrator's
// kubeconfig, each serving its webhooks on a port of 127.0.0.1 with a
// certificate of a throwaway CA. It returns once every manager reports
// ready and serves its webhooks; a manager that does not is stopped and
// named with its log tail, and a missing binary is named with its path
// (ErrMissingAssets).
func Start(cfg *rest.Config, o Options) (*Managers, error) {
	comps, err := o.components()
	if err != nil {
		return nil, err
	}
	if len(comps) == 0 {
		return nil, errors.New("capi.Start: set Options.CAPI, IPAM, CABPT or Capmox")
	}
	root := o.assets
	if root == "" {
		if root, err = FindAssets(); err != nil {
			return nil, err
		}
	}
	for _, c := range comps {
		if err := executable(c.path(root)); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "pxsubstrate-capi-")
	if err != nil {
		return nil, err
	}
	m := &Managers{dir: dir}
	if err := m.start(cfg, o, comps, root); err != nil {
		return nil, errors.Join(err, m.Stop())
	}
	return m, nil
}

// StartT is Start for one test: it fails t when a manager does not start
// and stops the managers when t ends.
func StartT(t testing.TB, cfg *rest.Config, o Options) *Managers {
	t.Helper()
	return testenv.StartFor(t, func() (*Managers, error) { return Start(cfg, o) })
}

func (m *Managers) start(cfg *rest.Config, o Options, comps []component, root string) error {
	ca, certPEM, keyPEM, err := pki.MakeLoopbackServer("pxsubstrate capi test CA")
	if err != nil {
		return err
	}
	certDir := filepath.Join(m.dir, "certs")
	kubeconfig := filepath.Join(m.dir, "kubeconfig")
	if err := writeFiles(certDir, certPEM, keyPEM); err != nil {
		return err
	}
	if err := testenv.WriteKubeconfig(kubeconfig, cfg, ""); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return err
	}
	if o.ports == nil {
		o.ports = testproc.FreePort
	}
	api, err := url.Parse(cfg.Host)
	if err != nil || api.Port() == "" {
		return fmt.Errorf("capi.Start: the API server's address %q has no port", cfg.Host)
	}
	r := runner{
		cfg: cfg, c: c, assets: root, kubeconfig: kubeconfig, certDir: certDir,
		certPEM: certPEM, keyPEM: keyPEM, caPEM: ca.PEM, ports: o.ports,
		reach: append([]string{api.Host}, o.CapmoxReaches...),
	}
	for _, comp := range comps {
		mgr, err := m.run(r, comp)
		if err != nil {
			return err
		}
		switch comp.name {
		case coreComponent.name:
			m.CAPI = mgr
		case ipamComponent.name:
			m.IPAM = mgr
		case cabptComponent.name:
			m.CABPT = mgr
		default:
			m.Capmox = mgr
		}
	}
	return nil
}

// runner is what starting a manager needs.
type runner struct {
	cfg                         *rest.Config
	c                           client.Client
	assets, kubeconfig, certDir string
	certPEM, keyPEM, caPEM      []byte
	ports                       func() (int, error)
	// reach are the addresses a manager in a network namespace of its
	// own must reach: the API server's and Options.CapmoxReaches.
	reach []string
}

// run installs comp's manifests for a webhook port and starts its manager
// there. A manager whose webhook port is fixed runs in a network namespace
// of its own, or, where there is none, holds the machine's port: its lock
// is taken first and kept until the manager has stopped.
func (m *Managers) run(r runner, comp component) (*Manager, error) {
	p, err := m.portsFor(r, comp)
	if err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", comp.title(), err)
	}
	mgr, err := m.launch(r, comp, p)
	if err != nil {
		p.release()
		return nil, err
	}
	mgr.release = p.release
	if err := mgr.Start(); err != nil {
		// A manager that was not ready is killed: nothing holds the port.
		mgr.releaseIfExited()
		return nil, err
	}
	return mgr, nil
}

// managerPorts are where a manager serves: webhook and health are ports of
// the machine's 127.0.0.1 (the webhook configurations call webhook);
// inside is the webhook port the manager is told, launcher starts it
// (nil: from the test process) and release gives back what it held.
type managerPorts struct {
	webhook, health, inside int
	launcher                func(start func() error) error
	release                 func()
}

// portsFor picks a manager's ports: free ones, or for a manager whose
// webhook port is fixed, a network namespace of its own (isolate), or the
// lock of the machine's port where the test process may not make one.
func (m *Managers) portsFor(r runner, comp component) (managerPorts, error) {
	if comp.fixedWebhookPort == 0 {
		webhook, err := r.ports()
		if err != nil {
			return managerPorts{}, err
		}
		health, err := r.ports()
		return managerPorts{webhook: webhook, health: health, inside: webhook, release: func() {}}, err
	}
	iso, err := isolate(comp.fixedWebhookPort, r.reach, r.ports)
	if err == nil {
		return managerPorts{webhook: iso.webhook, health: iso.health, inside: comp.fixedWebhookPort,
			launcher: iso.launch, release: iso.close}, nil
	}
	if !errors.Is(err, errNoNamespace) {
		return managerPorts{}, err
	}
	release, err := lockPort(comp.fixedWebhookPort, portLockTimeout)
	if err != nil {
		return managerPorts{}, err
	}
	health, err := r.ports()
	if err != nil {
		release()
		return managerPorts{}, err
	}
	return managerPorts{webhook: comp.fixedWebhookPort, health: health, inside: comp.fixedWebhookPort, release: release}, nil
}

// launch installs comp's manifests for p's webhook port and makes its
// process.
func (m *Managers) launch(r runner, comp component, p managerPorts) (*Manager, error) {
	base := fmt.Sprintf("https://127.0.0.1:%d", p.webhook)
	if err := install(r.cfg, r.c, comp, base, r.caPEM); err != nil {
		return nil, err
	}
	env := []string{"KUBECONFIG=" + r.kubeconfig}
	if comp.certDirFromTemp {
		tmp := filepath.Join(m.dir, comp.dir+"-tmp")
		if err := writeFiles(filepath.Join(tmp, "k8s-webhook-server", "serving-certs"), r.certPEM, r.keyPEM); err != nil {
			return nil, err
		}
		env = append(env, "TMPDIR="+tmp)
	}
	args := comp.flags(p.inside, p.health, r.certDir)
	proc := Process(comp.title(), comp.path(r.assets), args, env, filepath.Join(m.dir, comp.dir+"-"+comp.binary+".log"))
	proc.Launcher = p.launcher
	proc.Ready = func() error {
		if !Serving(p.webhook, p.health, r.caPEM) {
			return fmt.Errorf("no /readyz on port %d or no webhook on port %d", p.health, p.webhook)
		}
		return nil
	}
	return &Manager{Process: proc}, nil
}

// install creates or updates comp's CRDs (waiting until they are served) and
// its webhook configurations.
func install(cfg *rest.Config, c client.Client, comp component, base string, caPEM []byte) error {
	crds, err := comp.crds(base, caPEM)
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		return fmt.Errorf("cannot install the CRDs of %s: %w", comp.module, err)
	}
	objs, err := comp.webhookConfigs(base, caPEM)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := CreateOrReplace(c, o); err != nil {
			return fmt.Errorf("cannot install %s of %s: %w", o.GetName(), comp.module, err)
		}
	}
	return nil
}

// CreateOrReplace creates o, or replaces the object of its name with it.
func CreateOrReplace(c client.Client, o client.Object) error {
	ctx := context.Background()
	err := c.Create(ctx, o)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	old := o.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), old); err != nil {
		return err
	}
	o.SetResourceVersion(old.GetResourceVersion())
	return c.Update(ctx, o)
}

// Stop stops every started manager by its process id, in the reverse
// order of their start, and removes the managers' folder (certificates,
// kubeconfig, logs).
func (m *Managers) Stop() error {
	var errs []error
	for _, mgr := range []*Manager{m.Capmox, m.CABPT, m.IPAM, m.CAPI} {
		if mgr != nil {
			errs = append(errs, mgr.Stop())
		}
	}
	errs = append(errs, os.RemoveAll(m.dir))
	return errors.Join(errs...)
}

// FindAssets returns the folder hack/capi-assets.sh builds the managers
// into (one folder per build inside it): $PXSUBSTRATE_CAPI_ASSETS when
// set, else DefaultAssetsDir. Start checks the binaries it needs.
func FindAssets() (string, error) { return assets().Folder() }

// DefaultAssetsDir is where hack/capi-assets.sh puts the binaries:
// ${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}/capi,
// holding <capi>-ipam<ipam>/{cluster-api-manager,ipam-manager},
// capmox-<version>/capmox-manager and cabpt-<version>/cabpt-manager.
func DefaultAssetsDir() string {
	return filepath.Join(testenv.CacheRoot(), "capi")
}

func assets() testenv.Assets {
	return testenv.Assets{Env: envAssets, Default: DefaultAssetsDir(), Missing: ErrMissingAssets, Hint: assetsHint}
}

func executable(path string) error { return assets().Executable(path) }

func writeFiles(dir string, certPEM, keyPEM []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600)
}

// Serving says whether a manager answers /readyz on healthPort and serves
// TLS on webhookPort with a certificate caPEM signed.
func Serving(webhookPort, healthPort int, caPEM []byte) bool {
	hc := http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp",
		fmt.Sprintf("127.0.0.1:%d", webhookPort), &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		return false
	}
	conn.Close()
	return true
}
