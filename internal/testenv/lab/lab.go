// Package lab runs, on one machine, everything a tenant cluster's workers
// come up with: a management kube-apiserver with the real managers of
// Cluster API core, the in-cluster IPAM provider, capmox and the Talos
// bootstrap provider (internal/testenv/capi), and optionally the
// proxmox-network controller; a second kube-apiserver playing the
// tenant's control plane; and the lab's Proxmox VE (internal/testenv/pvelab:
// the API fake with three nodes, a VLAN-aware bridge and a Talos template
// made by talostemplate.Create, whose started VMs "boot" and register
// their Nodes), in the lab's process or as a program of its own
// (hack/cmd/pvelab).
//
// Apply then does what Cozystack and the proxmox-network controller do for
// a tenant's Kubernetes and KubernetesNodes: the tenant's Proxmox user and
// capmox token (pveacl's plan, applied through the API), the render, and
// the objects on the management API server. Kamaji is not served by the
// Go module proxy and runs control planes as Pods, which nothing runs
// here: the lab plays its part, pointing the KamajiControlPlane at the
// tenant API server and marking it ready, and writing the cluster's
// kubeconfig Secret as Kamaji does.
package lab

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
	"github.com/pxsubstrate/pxsubstrate/testproc"
)

// Options configure a lab. The zero value runs capmox v0.9.0 with the
// Proxmox VE fake in the lab's process and no controller.
type Options struct {
	// Capmox is the capmox generation to run (default capi.CapmoxV09).
	Capmox capi.Capmox
	// Log receives a line for each step; nil discards them.
	Log func(string)
	// Dir takes the lab's files: kubeconfigs, the fake's state, CA and
	// root token secret, the programs' logs (default: a temporary folder,
	// removed by Stop).
	Dir string
	// ProxmoxProgram, when set, is the pvelab binary (hack/cmd/pvelab): the fake then runs
	// as a process of its own and PVE is nil.
	ProxmoxProgram string
	// Controller, when set, is the proxmox-network-controller binary,
	// run against the management API server with our CRDs and Kube-OVN's
	// installed (no OVN: --manage-gateway-chassis=false), Multus'
	// NetworkAttachmentDefinition CRD, and the lab's ProxmoxNetworkZone
	// Zone on the trunk bridge, with Kube-OVN's part played (zone.go), so
	// that a tenant's VPC subnet gets its VLAN and becomes Ready.
	Controller string
	// PoolHA, with Controller, gives the controller the platform's pool HA
	// token (pveacl's platform.ha, made through the API as Cozystack's
	// operator would with acl apply) in the Secret PoolHASecret, so pools
	// with proxmox.ha get their workers under Proxmox HA, and runs the
	// controller as ControllerAccount under the manifests' RBAC.
	PoolHA bool
	// PoolHealing, with Controller, runs the controller with
	// --pool-healing=labelled (grace PoolHealingGrace, looking every
	// PoolHealingInterval) under config/rbac's pool healing role too.
	PoolHealing bool
	// FailureDomains, with Controller, runs the controller with
	// --failure-domains (looking every FailureDomainsInterval) under
	// config/rbac's failure domains role too.
	FailureDomains bool
	// NodeMonitorGracePeriod is how long a tenant Node may go without a
	// status from its VM's kubelet before the node lifecycle controller
	// sets its Ready condition to Unknown (kube-controller-manager's
	// --node-monitor-grace-period; 0 keeps its default, 50s). The kubelets
	// post every fifth of it (by default every 10s).
	NodeMonitorGracePeriod time.Duration
	// HAFenceDelay, with the fake in the lab's process, is how long the
	// HA manager waits after a Proxmox node goes offline before it
	// recovers the node's HA services (0: the fake's default, 500 ms; a
	// real cluster fences after about two minutes).
	HAFenceDelay time.Duration
}

// Lab is a running lab.
type Lab struct {
	Capmox capi.Capmox
	// Mgmt is the management API server (Cluster API, providers, tenant
	// objects) and Client a client of it, knowing every kind of client-go.
	Mgmt   *rest.Config
	Client client.Client
	// Tenant is the API server playing the tenant clusters' control plane,
	// and TenantClient a client of it.
	Tenant       *rest.Config
	TenantClient client.Client
	// Proxmox reaches the lab's Proxmox VE as root@pam, and Template is
	// its Talos template.
	Proxmox  pveapi.Config
	Template pvelab.Template
	// PVE is the Proxmox VE fake when it runs in the lab's process, for
	// tests to read its state; nil when it runs as a program.
	PVE      *pvefake.Server
	Managers *capi.Managers
	// Processes are the programs the lab started besides the managers
	// and API servers: pvelab and the controller, when asked for.
	Processes []*testproc.Process
	// Dir holds the lab's files (Options.Dir).
	Dir string

	log     func(string)
	stops   []func() error
	proxmox *pvelab.Proxmox
	pods    *podRunner
}

// Start starts a lab. On an error everything started so far is stopped.
func Start(ctx context.Context, o Options) (*Lab, error) {
	l := &Lab{Capmox: o.Capmox, log: o.Log, Dir: o.Dir}
	if l.Capmox == "" {
		l.Capmox = capi.CapmoxV09
	}
	if l.log == nil {
		l.log = func(string) {}
	}
	if l.Dir == "" {
		dir, err := os.MkdirTemp("", "pxsubstrate-lab-")
		if err != nil {
			return nil, err
		}
		l.Dir = dir
		l.stops = append(l.stops, func() error { return os.RemoveAll(dir) })
	}
	if err := l.start(ctx, o); err != nil {
		return nil, errors.Join(err, l.Stop())
	}
	return l, nil
}

func (l *Lab) start(ctx context.Context, o Options) error {
	mgmt := testenv.APIServerOptions{CAPI: true, CAPIIPAM: true, Scheme: clientgoscheme.Scheme}
	if o.Controller != "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			return err
		}
		mgmt.UpstreamCRDs = []string{KubeOVNCRDs}
		mgmt.CRDPaths = []string{filepath.Join(root, "config", "crd", "bases"), filepath.Join(root, NADCRDs)}
	}
	var err error
	if l.Mgmt, l.Client, err = l.apiServer(mgmt); err != nil {
		return fmt.Errorf("cannot start the management API server: %w", err)
	}
	l.log("management API server at " + l.Mgmt.Host)
	if err := testenv.WriteKubeconfig(filepath.Join(l.Dir, MgmtKubeconfig), l.Mgmt, ""); err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(l.Mgmt, envtest.CRDInstallOptions{CRDs: standIns()}); err != nil {
		return fmt.Errorf("cannot install the stand-in CRDs: %w", err)
	}
	if l.Tenant, l.TenantClient, err = l.tenantAPIServer(); err != nil {
		return fmt.Errorf("cannot start the tenant API server: %w", err)
	}
	l.log("tenant API server at " + l.Tenant.Host)
	if err := testenv.WriteKubeconfig(filepath.Join(l.Dir, TenantKubeconfig), l.Tenant, ""); err != nil {
		return err
	}
	if o.NodeMonitorGracePeriod < 0 {
		return fmt.Errorf("lab: NodeMonitorGracePeriod %s is negative", o.NodeMonitorGracePeriod)
	}
	if err := l.startNodeLifecycle(o.NodeMonitorGracePeriod); err != nil {
		return err
	}
	if err := l.startProxmox(ctx, o.ProxmoxProgram, statusFrequency(o.NodeMonitorGracePeriod), o.HAFenceDelay); err != nil {
		return err
	}
	l.log("Proxmox VE fake at " + l.Proxmox.URL)
	if err := l.startPods(); err != nil {
		return err
	}
	pve, err := url.Parse(l.Proxmox.URL)
	if err != nil {
		return fmt.Errorf("the Proxmox VE fake's URL %q: %w", l.Proxmox.URL, err)
	}
	if l.Managers, err = capi.Start(l.Mgmt, capi.Options{CAPI: true, IPAM: true, CABPT: true, Capmox: l.Capmox,
		CapmoxReaches: []string{pve.Host}}); err != nil {
		return err
	}
	l.stops = append(l.stops, l.Managers.Stop)
	l.log(fmt.Sprintf("managers: Cluster API, IPAM, capmox %s, CABPT", l.Capmox))
	if err := l.startGarbageCollector(); err != nil {
		return err
	}
	if o.Controller != "" {
		return l.controller(ctx, o)
	}
	return nil
}

// controller starts the proxmox-network controller as the manifests'
// ServiceAccount, under their RBAC, and with Options.PoolHA gives it the
// pool HA token.
func (l *Lab) controller(ctx context.Context, o Options) error {
	var args []string
	if o.PoolHA {
		if err := l.poolHASecret(ctx); err != nil {
			return err
		}
		args = append(args, "--proxmox-ha-credentials="+PoolHASecret, "--proxmox-ha-sweep-interval=5s")
	}
	rbac := []string{"role.yaml", "role_binding.yaml"}
	if o.PoolHealing {
		args = append(args, "--pool-healing=labelled", "--pool-healing-grace="+PoolHealingGrace.String(), "--pool-healing-interval="+PoolHealingInterval.String())
		rbac = append(rbac, "pool_healing_role.yaml", "pool_healing_role_binding.yaml")
	}
	if o.FailureDomains {
		args = append(args, "--failure-domains", "--failure-domains-interval="+FailureDomainsInterval.String())
		rbac = append(rbac, "failure_domains_role.yaml", "failure_domains_role_binding.yaml")
	}
	kubeconfig, err := l.controllerKubeconfig(ctx, rbac...)
	if err != nil {
		return err
	}
	if err := l.startZone(ctx); err != nil {
		return err
	}
	return l.startController(ctx, o.Controller, kubeconfig, args...)
}

// The lab's pool healing: a VM must be PoolHealingGrace old before the
// controller destroys or starts it (a clone here takes seconds, not the
// minutes the default allows for), and it looks every
// PoolHealingInterval.
const (
	PoolHealingGrace    = 15 * time.Second
	PoolHealingInterval = 3 * time.Second
)

// FailureDomainsInterval is how often the lab's controller looks at a pool
// spread over failure domains.
const FailureDomainsInterval = 3 * time.Second

// The files of a lab's Dir.
const (
	// MgmtKubeconfig and TenantKubeconfig reach the management and tenant
	// API servers as an administrator.
	MgmtKubeconfig   = "kubeconfig"
	TenantKubeconfig = "tenant.kubeconfig"
	// ProxmoxState is the fake's state file (pvelab.State) when it runs
	// as a program.
	ProxmoxState = "proxmox.json"
)

// KubeOVNCRDs is the folder of Kube-OVN's CRDs under third_party/crds
// that the controller watches.
const KubeOVNCRDs = "kube-ovn-v1.15.24"

// NADCRDs is the folder, under the repository, of Multus'
// NetworkAttachmentDefinition CRD, which a VPC's render writes one of per
// subnet (vpcrender's tests install the same).
const NADCRDs = "vpcrender/testdata/crds"

// TenantAPIPort is the port of the tenant API server: Kamaji's control
// plane Service port, which the workers' Talos configuration names.
const TenantAPIPort = 6443

// tenantAPIServer starts the tenant API server on port 6443 of a loopback
// address of its own (127.77.x.y), the ingress address of Kamaji's
// Service, so that several labs and a real cluster on the machine keep
// out of each other's way.
func (l *Lab) tenantAPIServer() (*rest.Config, client.Client, error) {
	var errs []error
	for range 5 {
		addr := fmt.Sprintf("127.77.%d.%d", 1+rand.IntN(254), 1+rand.IntN(254))
		// every kind of client-go: the tenant's storage and CSI kinds too
		cfg, c, err := l.apiServerAt(testenv.APIServerOptions{Scheme: clientgoscheme.Scheme}, addr, strconv.Itoa(TenantAPIPort))
		if err == nil {
			return cfg, c, nil
		}
		errs = append(errs, err)
	}
	return nil, nil, errors.Join(errs...)
}

func (l *Lab) apiServer(o testenv.APIServerOptions) (*rest.Config, client.Client, error) {
	return l.apiServerAt(o, "", "")
}

// apiServerAt starts an API server on addr:port, or on a free port of
// 127.0.0.1 when they are empty.
func (l *Lab) apiServerAt(o testenv.APIServerOptions, addr, port string) (*rest.Config, client.Client, error) {
	env, err := testenv.Environment(o)
	if err != nil {
		return nil, nil, err
	}
	if addr != "" {
		api := env.ControlPlane.GetAPIServer()
		api.Address, api.Port = addr, port
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, err
	}
	l.stops = append(l.stops, stopEnv(env))
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	return cfg, c, err
}

func stopEnv(env *envtest.Environment) func() error { return env.Stop }

// standIns are the CRDs of what the Go module proxy does not serve and
// the lab does not run: Kamaji's control plane (the lab plays it) and
// Flux's HelmRelease (the tenant's CSI release, which nothing installs).
func standIns() []*apiextv1.CustomResourceDefinition {
	return []*apiextv1.CustomResourceDefinition{
		capi.StandInCRD("controlplane.cluster.x-k8s.io", "v1alpha1", "KamajiControlPlane", "v1beta1"),
		capi.StandInCRD("helm.toolkit.fluxcd.io", "v2", "HelmRelease"),
	}
}

// Stop stops everything the lab started, last started first.
func (l *Lab) Stop() error {
	var errs []error
	for _, stop := range slices.Backward(l.stops) {
		errs = append(errs, stop())
	}
	l.stops = nil
	return errors.Join(errs...)
}
