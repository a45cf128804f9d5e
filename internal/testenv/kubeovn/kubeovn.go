package kubeovn

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/testproc"
)

const (
	envAssets  = "PXSUBSTRATE_KUBEOVN_ASSETS"
	assetsHint = "run hack/test.sh or hack/kubeovn-assets.sh to build them"

	// ControllerBinary is the name hack/kubeovn-assets.sh builds
	// ./cmd/controller under.
	ControllerBinary = "kube-ovn-controller"
	// WebhookBinary is the name it builds the multi-call ./cmd under,
	// which makes the binary run the webhook.
	WebhookBinary = "kube-ovn-webhook"
	// crdFile is where the module keeps its CRDs: the chart's template is
	// plain YAML (no template directive), so it is installed as it is.
	crdFile = "charts/kube-ovn/templates/kube-ovn-crd.yaml"
	// logDir is the folder kube-ovn-controller creates its log file in
	// before anything else (util.InitLogFilePerm; a hostPath in the chart),
	// which cannot be moved.
	logDir = "/var/log/kube-ovn"
	// controllerReady is what kube-ovn-controller logs once it leads, has
	// initialised OVN (the cluster router, the join and default switches),
	// IPAM and its CRs, started its workers, found the default and join
	// subnets ready and every Node annotated, and reached the last step of
	// its start-up garbage collection (router ports, switches and chassis
	// included).
	controllerReady = "start to gc vpc dns"
)

// The network settings kube-ovn-controller gets: the Kube-OVN chart's
// defaults, in the namespace it installs into.
const (
	Namespace      = "kube-system"
	ClusterRouter  = "ovn-cluster"
	DefaultSubnet  = "ovn-default"
	NodeSwitch     = "join"
	PodCIDR        = "10.16.0.0/16"
	PodGateway     = "10.16.0.1"
	JoinCIDR       = "100.64.0.0/16"
	ServiceCIDR    = "10.96.0.0/12"
	ProviderName   = "provider"
	DefaultVlan    = "ovn-vlan"
	DefaultVlanID  = "100"
	leaseName      = "kube-ovn-controller"
	podNamePrefix  = "kube-ovn-controller-"
	webhookPodName = "kube-ovn-webhook-0"
)

// ErrMissingAssets says a Kube-OVN binary cannot be found.
var ErrMissingAssets = errors.New("Kube-OVN binaries are missing")

// Options says what Start runs besides kube-ovn-controller.
type Options struct {
	// Webhook runs kube-ovn-webhook and installs the module's
	// ValidatingWebhookConfiguration calling it.
	Webhook bool
	// assets is the folder of the binaries; empty means FindAssets.
	assets string
	// ports picks the controller's metrics port; nil means a free port of
	// 127.0.0.1.
	ports func() (int, error)
}

// KubeOVN is Kube-OVN's control plane running against a test API server:
// its OVN northbound and southbound databases, kube-ovn-controller and,
// when asked, kube-ovn-webhook.
type KubeOVN struct {
	// NB and SB are the OVN databases kube-ovn-controller uses.
	NB, SB *DB
	// Webhook is kube-ovn-webhook; nil when not started.
	Webhook *testproc.Process

	controller  *testproc.Process
	cfg         *rest.Config
	dir, assets string
	kubeconfig  string
	metricsPort int
	starts      int
	// releaseCerts gives back the webhook's certificate folder.
	releaseCerts func()
}

// Start starts the OVN northbound and southbound databases, installs
// Kube-OVN's CRDs from KubeOVNModule on the API server of cfg and starts
// kube-ovn-controller (and kube-ovn-webhook when o asks) with an
// administrator's kubeconfig and the flags and environment of the module's
// chart. It returns once the controller leads and has started its workers;
// a process that does not get there is stopped and named with its log tail.
func Start(cfg *rest.Config, o Options) (*KubeOVN, error) {
	assets := o.assets
	if assets == "" {
		var err error
		if assets, err = FindAssets(); err != nil {
			return nil, err
		}
	}
	for _, bin := range []string{ControllerBinary, WebhookBinary} {
		if err := executable(filepath.Join(assets, bin)); err != nil {
			return nil, err
		}
	}
	mod, err := testenv.ModuleDir(testenv.KubeOVNModule)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pxsubstrate-kubeovn-")
	if err != nil {
		return nil, err
	}
	k := &KubeOVN{cfg: cfg, dir: dir, assets: assets, kubeconfig: filepath.Join(dir, "kubeconfig")}
	if err := k.start(mod, o); err != nil {
		// err already holds the log tail of a process that exited.
		return nil, errors.Join(err, k.stop(false))
	}
	return k, nil
}

// StartT is Start for one test: it fails t when something does not start
// and stops everything when t ends.
func StartT(t testing.TB, cfg *rest.Config, o Options) *KubeOVN {
	t.Helper()
	return testenv.StartFor(t, func() (*KubeOVN, error) { return Start(cfg, o) })
}

func (k *KubeOVN) start(mod string, o Options) error {
	var err error
	for _, d := range []struct {
		db  database
		out **DB
	}{{northbound, &k.NB}, {southbound, &k.SB}} {
		schema, err := moduleSchema(mod, d.db)
		if err != nil {
			return err
		}
		if *d.out, err = startDB(k.dir, d.db, schema); err != nil {
			return err
		}
	}
	if err := testenv.WriteKubeconfig(k.kubeconfig, k.cfg, ""); err != nil {
		return err
	}
	crds := filepath.Join(mod, crdFile)
	read, err := testenv.ReadCRDs(crds)
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(k.cfg, envtest.CRDInstallOptions{CRDs: read}); err != nil {
		return fmt.Errorf("cannot install the CRDs of %s from %s: %w", testenv.KubeOVNModule, crds, err)
	}
	if o.Webhook {
		if err := k.startWebhook(mod); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("kube-ovn-controller creates its log file in %s before anything else, and that folder cannot be made: %w", logDir, err)
	}
	if o.ports == nil {
		o.ports = testproc.FreePort
	}
	if k.metricsPort, err = o.ports(); err != nil {
		return err
	}
	return k.startController()
}

// Controller is the running kube-ovn-controller process.
func (k *KubeOVN) Controller() *testproc.Process { return k.controller }

// PodName is the name the running controller has (POD_NAME): each start
// is a new pod, as a Deployment's restart makes one.
func (k *KubeOVN) PodName() string { return podNamePrefix + strconv.Itoa(k.starts) }

// startController starts kube-ovn-controller as a new pod would and waits
// until it leads and has started its workers.
func (k *KubeOVN) startController() error {
	k.starts++
	log := filepath.Join(k.dir, fmt.Sprintf("%s-%d.log", ControllerBinary, k.starts))
	env := []string{
		"KUBECONFIG=" + k.kubeconfig, "ENABLE_SSL=false", "POD_NAME=" + k.PodName(), "POD_NAMESPACE=" + Namespace, "KUBE_NAMESPACE=" + Namespace,
		"KUBE_NODE_NAME=", "OVN_DB_IPS=127.0.0.1", "POD_IP=127.0.0.1", "POD_IPS=127.0.0.1", "ENABLE_BIND_LOCAL_IP=true",
	}
	p := capi.Process(ControllerBinary, filepath.Join(k.assets, ControllerBinary), k.controllerFlags(), env, log)
	p.Ready = p.Logged(controllerReady)
	if err := p.Start(); err != nil {
		return err
	}
	k.controller = p
	return nil
}

// controllerFlags are the module chart's arguments with its defaults
// (templates/controller-deploy.yaml, values.yaml) and the database
// addresses its start-controller.sh adds, with the kubeconfig, the log file
// and the metrics port of this test.
func (k *KubeOVN) controllerFlags() []string {
	return []string{
		"--ovn-nb-addr=" + k.NB.Addr, "--ovn-sb-addr=" + k.SB.Addr,
		"--kubeconfig=" + k.kubeconfig,
		"--default-ls=" + DefaultSubnet, "--default-cidr=" + PodCIDR, "--default-gateway=" + PodGateway,
		"--default-gateway-check=true", "--default-logical-gateway=false", "--default-u2o-interconnection=false",
		"--default-exclude-ips=", "--cluster-router=" + ClusterRouter, "--node-switch=" + NodeSwitch,
		"--node-switch-cidr=" + JoinCIDR, "--service-cluster-ip-range=" + ServiceCIDR,
		"--network-type=geneve", "--default-provider-name=" + ProviderName, "--default-interface-name=",
		"--default-exchange-link-name=false", "--default-vlan-name=" + DefaultVlan, "--default-vlan-id=" + DefaultVlanID,
		"--ls-dnat-mod-dl-dst=true", "--ls-ct-skip-dst-lport-ips=true", "--pod-nic-type=veth-pair",
		"--enable-lb=true", "--enable-np=true", "--enable-eip-snat=true", "--enable-external-vpc=false",
		"--enable-ecmp=false", "--logtostderr=false", "--alsologtostderr=true",
		"--gc-interval=360", "--inspect-interval=20",
		"--log_file=" + filepath.Join(k.dir, "kube-ovn-controller.klog"), "--log_file_max_size=200",
		"--enable-lb-svc=false", "--keep-vm-ip=true", "--enable-metrics=true", "--node-local-dns-ip=",
		"--secure-serving=false", "--enable-ovn-ipsec=false", "--enable-anp=false",
		"--ovsdb-con-timeout=3", "--ovsdb-inactivity-timeout=10",
		"--enable-live-migration-optimize=true", "--enable-ovn-lb-prefer-local=false",
		"--image=docker.io/kubeovn/kube-ovn:" + kubeOVNVersion(),
		"--pprof-port=" + strconv.Itoa(k.metricsPort),
	}
}

// RestartController stops kube-ovn-controller by its process id (SIGTERM:
// it releases its lease, as a deleted pod's does) and starts a new one
// under a new pod name, returning once the new one has started its workers.
func (k *KubeOVN) RestartController() error {
	if err := k.controller.Stop(); err != nil {
		return err
	}
	return k.startController()
}

// Stop stops kube-ovn-controller, kube-ovn-webhook and the databases by
// their process ids and removes their folder. A process that had exited by
// itself is reported with its log tail.
func (k *KubeOVN) Stop() error { return k.stop(true) }

func (k *KubeOVN) stop(reportExited bool) error {
	var errs []error
	for _, p := range []*testproc.Process{k.controller, k.Webhook} {
		if p != nil && (reportExited || !p.Exited()) {
			errs = append(errs, p.Stop())
		}
	}
	if k.releaseCerts != nil {
		k.releaseCerts()
		k.releaseCerts = nil
	}
	for _, db := range []*DB{k.NB, k.SB} {
		if db != nil {
			errs = append(errs, db.Stop())
		}
	}
	errs = append(errs, os.RemoveAll(k.dir))
	return errors.Join(errs...)
}

// kubeOVNVersion is KubeOVNModule's version.
func kubeOVNVersion() string {
	_, v, _ := strings.Cut(testenv.KubeOVNModule, "@")
	return v
}

// FindAssets returns the folder hack/kubeovn-assets.sh builds the binaries
// into: $PXSUBSTRATE_KUBEOVN_ASSETS when set, else DefaultAssetsDir.
func FindAssets() (string, error) { return assets().Folder() }

// DefaultAssetsDir is where hack/kubeovn-assets.sh puts the binaries:
// ${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}/kube-ovn/<version>.
func DefaultAssetsDir() string {
	return filepath.Join(testenv.CacheRoot(), "kube-ovn", kubeOVNVersion())
}

func assets() testenv.Assets {
	return testenv.Assets{Env: envAssets, Default: DefaultAssetsDir(), Missing: ErrMissingAssets, Hint: assetsHint}
}

func executable(path string) error { return assets().Executable(path) }
