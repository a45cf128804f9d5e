package reconcilers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/heal"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubenetgateway"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/poolha"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/spread"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/vpcipam"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

// Config is what the daemon and the simulator give a Set; only Client is
// required.
type Config struct {
	// Client reads and writes the API: the manager's cached client, or the
	// simulated API. The Set writes through it with network.Feed, so every
	// write of its reconcilers reaches Feed at once, as an informer without
	// lag would.
	Client client.Client
	// APIReader reads past any cache; default the network controller's
	// client (Wrap's, when set).
	APIReader client.Reader
	// Feed receives those writes; nil is the Set itself (Observe, Forget).
	// The simulator passes its view of every write, which passes them on to
	// the Set.
	Feed network.Target
	// Wrap, when set, wraps the network controller's client above the feed
	// (tests count or fail its calls): a write it lets through reaches Feed
	// even when it then fails the call.
	Wrap func(client.WithWatch) client.Client
	// Clock tells the time; default the real clock.
	Clock clock.WithTicker
	// Log receives the reconcilers' logs, each under its name; default:
	// discard.
	Log logr.Logger
	// Recorder receives every Event, adapted once by the Set
	// (engine.EventsRecorder) with the actions of every reconciler's
	// reasons; nil emits none.
	Recorder events.EventRecorder
	// Registry receives the runners' pxsubstrate_engine_* metrics; nil
	// registers them nowhere. Metrics receives the cozy_proxmox_* series;
	// nil keeps unregistered ones.
	Registry prometheus.Registerer
	Metrics  *network.Metrics
	// SubnetPruneTimeout, Workers, StatusInterval, Resync and Hypervisor
	// are the network controller's (network.Config); a negative Resync
	// turns every runner's resync off (the simulator enqueues itself).
	SubnetPruneTimeout time.Duration
	Workers            int
	StatusInterval     time.Duration
	Resync             time.Duration
	Hypervisor         network.Hypervisor
	// NB reaches the OVN northbound database: the Set then manages each
	// network's gateway (kubenetgateway), collects the groups of networks
	// that are gone (in Run), and reconciles again on a Node change.
	// NBEvents brings it what that client reports. Gateway is any other
	// network.Gateway (tests); with neither, gateways are not managed.
	NB       kubenetgateway.NB
	NBEvents *NBEvents
	Gateway  network.Gateway
	// PoolHAProxmox is the pool HA token's client (nil: pool HA is off
	// and says so on each pool with proxmox.ha); PoolHASweep how often Run
	// sweeps (0: never).
	PoolHAProxmox func(context.Context) (pveapi.Client, error)
	PoolHASweep   time.Duration
	// PoolHealing, when set, heals the pools of capmox's known faults
	// (heal.Reconciler) over MachineDeployments, when the API server
	// serves them; nil: no pool heals.
	PoolHealing *PoolHealing
	// FailureDomains, when set, keeps the pools spread over failure
	// domains spread (spread.Reconciler) over MachineDeployments, when the
	// API server serves them; nil: no pool is moved.
	FailureDomains *FailureDomains
}

// FailureDomains is what the failure domains runner is given.
type FailureDomains struct {
	// Interval is spread.Reconciler's (0: its default).
	Interval time.Duration
}

// PoolHealing is what the pool healing runner is given.
type PoolHealing struct {
	// All heals every pool; otherwise only the pools labelled
	// poolheal.Label.
	All bool
	// Grace and Interval are heal.Reconciler's (0: its defaults).
	Grace, Interval time.Duration
}

// Set is the proxmox-network controller's reconcilers, assembled.
type Set struct {
	cfg      Config
	client   client.WithWatch
	recorder engine.Recorder
	network  *network.Controller
	// gateway is the NB gateway adapter, when NB is given; gateways
	// whether any gateway is managed.
	gateway   *kubenetgateway.Gateway
	gateways  bool
	collector *kubenetgateway.Collector
	poolHA    *engine.Runner[*clusterv1.Machine]
	sweeper   *poolha.Reconciler
	vpc       *engine.Runner[*capiipam.IPAddressClaim]
	heal      *engine.Runner[*clusterv1.MachineDeployment]
	spread    *engine.Runner[*clusterv1.MachineDeployment]
	watched   []client.Object
}

// New assembles a Set; it reads nothing but discovery, and starts nothing.
func New(cfg Config) (*Set, error) {
	if cfg.Client == nil {
		return nil, errors.New("cannot assemble the controller: Client is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Log.GetSink() == nil {
		cfg.Log = logr.Discard()
	}
	s := &Set{cfg: cfg, recorder: engine.NopRecorder{}}
	if cfg.Recorder != nil {
		s.recorder = engine.EventsRecorder{Recorder: cfg.Recorder, Actions: Actions()}
	}
	feed := cfg.Feed
	if feed == nil {
		feed = s
	}
	s.client = interceptor.NewClient(watchless{cfg.Client}, network.Feed(feed))
	if err := s.buildNetwork(); err != nil {
		return nil, err
	}
	if err := s.buildRunners(); err != nil {
		return nil, err
	}
	return s, nil
}

// Actions are the events.k8s.io actions of every reason the Set's
// reconcilers emit.
func Actions() map[engine.Reason]string {
	out := map[engine.Reason]string{}
	for _, a := range []map[engine.Reason]string{network.EventActions, poolha.EventActions, vpcipam.EventActions, heal.EventActions, spread.EventActions} {
		maps.Copy(out, a)
	}
	return out
}

// buildNetwork builds the network controller, with its gateway.
func (s *Set) buildNetwork() error {
	cfg := s.cfg
	gw := cfg.Gateway
	if cfg.NB != nil {
		var err error
		if s.gateway, err = kubenetgateway.New(cfg.NB, cfg.Client, kubenetgateway.WithClock(cfg.Clock)); err != nil {
			return err
		}
		gw = s.gateway
	}
	s.gateways = gw != nil
	var c client.Client = s.client
	if cfg.Wrap != nil {
		c = cfg.Wrap(s.client)
	}
	if cfg.APIReader == nil {
		s.cfg.APIReader, cfg.APIReader = c, c
	}
	netCfg := network.Config{
		Client: c, APIReader: cfg.APIReader, Clock: cfg.Clock, Gateway: gw, Hypervisor: cfg.Hypervisor,
		SubnetPruneTimeout: cfg.SubnetPruneTimeout, Metrics: cfg.Metrics, EngineMetrics: cfg.Registry,
		Log: cfg.Log.WithName("network"), Workers: cfg.Workers, StatusInterval: cfg.StatusInterval, Resync: cfg.Resync,
	}
	if cfg.Recorder != nil {
		netCfg.Recorder = s.recorder
	}
	var err error
	if s.network, err = network.New(netCfg); err != nil {
		return err
	}
	if s.gateway != nil {
		m := s.network.Metrics()
		s.collector = &kubenetgateway.Collector{NB: cfg.NB, Reader: cfg.APIReader, Collected: m.GroupsCollected, Errors: m.NBErrors,
			Log: cfg.Log.WithName("gateway-gc"), Clock: cfg.Clock}
	}
	s.watched = []client.Object{
		&v1alpha1.ProxmoxNetwork{}, &v1alpha1.ProxmoxNetworkZone{}, &v1alpha1.ProxmoxVLANClaim{},
		&kubeovnv1.Vlan{}, &kubeovnv1.Subnet{}, &kubeovnv1.ProviderNetwork{},
		&ipamv1alpha2.InClusterIPPool{}, &corev1.Namespace{},
	}
	optional := []client.Object{&capiipam.IPAddress{}}
	for _, gvk := range network.MachineKinds {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		optional = append(optional, u)
	}
	for _, o := range optional {
		served, err := s.served(o)
		if err != nil {
			return err
		}
		if served {
			s.watched = append(s.watched, o)
		}
	}
	return nil
}

// runnerOptions are the options of the runners besides the network
// controller's.
func (s *Set) runnerOptions(name string) []engine.Option {
	o := []engine.Option{engine.WithName(name), engine.WithLogger(s.cfg.Log.WithName(name)), engine.WithMetrics(s.cfg.Registry),
		engine.WithRecorder(s.recorder), engine.WithClock(s.cfg.Clock)}
	if s.cfg.Resync < 0 {
		o = append(o, engine.WithResync(0))
	}
	return o
}

// buildRunners builds pool HA when the API server serves Machines, the
// VPC address runner when it serves IPAddressClaims, and pool healing,
// when asked, when it serves MachineDeployments.
func (s *Set) buildRunners() error {
	served, err := s.served(&clusterv1.Machine{})
	if err != nil {
		return err
	}
	if served {
		s.sweeper = &poolha.Reconciler{Client: s.client, Reader: s.cfg.APIReader, Proxmox: s.cfg.PoolHAProxmox, Log: s.cfg.Log.WithName("pool-ha")}
		if s.poolHA, err = engine.NewRunner[*clusterv1.Machine](s.client, func() *clusterv1.Machine { return &clusterv1.Machine{} }, s.sweeper,
			s.runnerOptions("pool-ha")...); err != nil {
			return err
		}
		s.watched = append(s.watched, &clusterv1.Machine{})
	}
	if served, err = s.served(&capiipam.IPAddressClaim{}); err != nil {
		return err
	}
	if served {
		if s.vpc, err = engine.NewRunner[*capiipam.IPAddressClaim](s.client, func() *capiipam.IPAddressClaim { return &capiipam.IPAddressClaim{} },
			&vpcipam.Reconciler{Client: s.client}, s.runnerOptions("vpc-ipam")...); err != nil {
			return err
		}
		s.watched = append(s.watched, &capiipam.IPAddressClaim{})
	}
	if err := s.buildHealing(); err != nil {
		return err
	}
	return s.buildSpread()
}

// buildSpread builds the failure domains runner when FailureDomains is
// set and the API server serves MachineDeployments.
func (s *Set) buildSpread() error {
	f := s.cfg.FailureDomains
	if f == nil {
		return nil
	}
	served, err := s.served(&clusterv1.MachineDeployment{})
	if err != nil || !served {
		return err
	}
	r := &spread.Reconciler{Client: s.client, Reader: s.cfg.APIReader, Interval: f.Interval, Log: s.cfg.Log.WithName("failure-domains")}
	if s.spread, err = engine.NewRunner[*clusterv1.MachineDeployment](s.client, func() *clusterv1.MachineDeployment { return &clusterv1.MachineDeployment{} },
		r, s.runnerOptions("failure-domains")...); err != nil {
		return err
	}
	if !slices.ContainsFunc(s.watched, func(o client.Object) bool { _, ok := o.(*clusterv1.MachineDeployment); return ok }) {
		s.watched = append(s.watched, &clusterv1.MachineDeployment{})
	}
	return nil
}

// buildHealing builds the pool healing runner when PoolHealing is set and
// the API server serves MachineDeployments.
func (s *Set) buildHealing() error {
	h := s.cfg.PoolHealing
	if h == nil {
		return nil
	}
	served, err := s.served(&clusterv1.MachineDeployment{})
	if err != nil || !served {
		return err
	}
	m, err := heal.NewMetrics(s.cfg.Registry)
	if err != nil {
		return err
	}
	r := &heal.Reconciler{Client: s.client, Reader: s.cfg.APIReader, All: h.All, Grace: h.Grace, Interval: h.Interval,
		Now: s.cfg.Clock.Now, Metrics: m, Log: s.cfg.Log.WithName("pool-healing")}
	if s.heal, err = engine.NewRunner[*clusterv1.MachineDeployment](s.client, func() *clusterv1.MachineDeployment { return &clusterv1.MachineDeployment{} },
		r, s.runnerOptions("pool-healing")...); err != nil {
		return err
	}
	s.watched = append(s.watched, &clusterv1.MachineDeployment{})
	return nil
}

// Network is the network controller.
func (s *Set) Network() *network.Controller { return s.network }

// ManagesGateways reports whether the Set manages the networks' gateways,
// so that a Node change concerns it (NodeChanged).
func (s *Set) ManagesGateways() bool { return s.gateways }

// Watched are examples of every kind whose changes the Set must be told
// of (Observe, Forget): the network controller's, those of its optional
// kinds the API server serves, and the kinds of the runners built.
func (s *Set) Watched() []client.Object { return append([]client.Object(nil), s.watched...) }

// Load fills the network controller's cache from the API; call it once
// before the first reconcile.
func (s *Set) Load(ctx context.Context) error {
	if err := s.network.Load(ctx); err != nil {
		return fmt.Errorf("cannot load the controller's cache: %w", err)
	}
	return nil
}
