// Package lab runs, on one machine, everything a tenant cluster's workers
// come up with: a management kube-apiserver with the real managers of
// Cluster API core, the in-cluster IPAM provider, capmox and the Talos
// bootstrap provider (internal/fakes/capi); a second kube-apiserver
// playing the tenant's control plane; and the Proxmox VE fake
// (pveapi/pveapitest) with three nodes, a VLAN-aware bridge, storages and
// a Talos template made by talostemplate.Create, whose started VMs "boot":
// each reads its bootstrap ISO, validates its Talos machine configuration
// with Talos's machinery (internal/fakes/talosboot) and registers its Node
// at the endpoint that configuration names (internal/fakes/nodeagent).
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
	"slices"
	"strconv"
	"sync"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/pxsubstrate/pxsubstrate/internal/fakes/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/fakes/kube"
	"github.com/pxsubstrate/pxsubstrate/pveapi/pveapitest"
)

// Options configure a lab. The zero value runs capmox v0.9.0.
type Options struct {
	// Capmox is the capmox generation to run (default capi.CapmoxV09).
	Capmox capi.Capmox
	// Log receives a line for each step; nil discards them.
	Log func(string)
}

// Lab is a running lab.
type Lab struct {
	Capmox capi.Capmox
	// Mgmt is the management API server (Cluster API, providers, tenant
	// objects) and Client a client of it.
	Mgmt   *rest.Config
	Client client.Client
	// Tenant is the API server playing the tenant clusters' control plane,
	// and TenantClient a client of it.
	Tenant       *rest.Config
	TenantClient client.Client
	// PVE is the Proxmox VE fake; Template its Talos template.
	PVE      *pveapitest.Server
	Template Template
	Managers *capi.Managers

	log   func(string)
	stops []func() error

	mu    sync.Mutex
	boots []Boot
}

// Start starts a lab. On an error everything started so far is stopped.
func Start(ctx context.Context, o Options) (*Lab, error) {
	l := &Lab{Capmox: o.Capmox, log: o.Log}
	if l.Capmox == "" {
		l.Capmox = capi.CapmoxV09
	}
	if l.log == nil {
		l.log = func(string) {}
	}
	if err := l.start(ctx); err != nil {
		return nil, errors.Join(err, l.Stop())
	}
	return l, nil
}

func (l *Lab) start(ctx context.Context) error {
	var err error
	if l.Mgmt, l.Client, err = l.apiServer(kube.APIServerOptions{CAPI: true, CAPIIPAM: true}); err != nil {
		return fmt.Errorf("cannot start the management API server: %w", err)
	}
	l.log("management API server at " + l.Mgmt.Host)
	if _, err := envtest.InstallCRDs(l.Mgmt, envtest.CRDInstallOptions{CRDs: standIns()}); err != nil {
		return fmt.Errorf("cannot install the stand-in CRDs: %w", err)
	}
	if l.Tenant, l.TenantClient, err = l.tenantAPIServer(); err != nil {
		return fmt.Errorf("cannot start the tenant API server: %w", err)
	}
	l.log("tenant API server at " + l.Tenant.Host)
	if err := l.startProxmox(ctx); err != nil {
		return err
	}
	l.log("Proxmox VE fake at " + l.PVE.URL)
	if l.Managers, err = capi.Start(l.Mgmt, capi.Options{CAPI: true, IPAM: true, CABPT: true, Capmox: l.Capmox}); err != nil {
		return err
	}
	l.stops = append(l.stops, l.Managers.Stop)
	l.log(fmt.Sprintf("managers: Cluster API, IPAM, capmox %s, CABPT", l.Capmox))
	return nil
}

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
		cfg, c, err := l.apiServerAt(kube.APIServerOptions{}, addr, strconv.Itoa(TenantAPIPort))
		if err == nil {
			return cfg, c, nil
		}
		errs = append(errs, err)
	}
	return nil, nil, errors.Join(errs...)
}

func (l *Lab) apiServer(o kube.APIServerOptions) (*rest.Config, client.Client, error) {
	return l.apiServerAt(o, "", "")
}

// apiServerAt starts an API server on addr:port, or on a free port of
// 127.0.0.1 when they are empty.
func (l *Lab) apiServerAt(o kube.APIServerOptions, addr, port string) (*rest.Config, client.Client, error) {
	env, err := kube.Environment(o)
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
