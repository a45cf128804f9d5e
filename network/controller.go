package network

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/keymutex"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

// Runner names, used in logs and engine metrics.
const (
	NetworkRunner   = "proxmoxnetwork"
	ZoneRunner      = "proxmoxnetworkzone"
	NamespaceRunner = "proxmoxnetwork-namespace"
)

// Controller reconciles ProxmoxNetworks, ProxmoxNetworkZones and the network
// annotation of namespaces. Build it with New, fill its cache with Load,
// then Run it, or drive it with Resync and Drain in tests and simulators.
type Controller struct {
	cfg        Config
	cache      *Cache
	store      *kubestore.Store
	networks   *engine.Runner[*v1alpha1.ProxmoxNetwork]
	zones      *engine.Runner[*v1alpha1.ProxmoxNetworkZone]
	namespaces *engine.Runner[*corev1.Namespace]
	memo       eventMemo
	throttle   *throttle
	// nsWrites makes the annotation writes to one namespace take turns
	// (namespaces hashed onto a fixed set of locks, so it does not grow).
	nsWrites keymutex.KeyMutex
	// fresh holds the statuses of networks whose Vlans were just created.
	fresh *freshVlans
	// hyper keeps each zone's last check of its Proxmox nodes.
	hyper hyperViews
}

// New builds a Controller; it reads nothing yet.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg.Cache.mu.Lock()
	cfg.Cache.checkZones = cfg.Hypervisor != nil
	cfg.Cache.mu.Unlock()
	c := &Controller{
		cfg:      cfg,
		cache:    cfg.Cache,
		store:    kubestore.New(cfg.Client, kubestore.WithReader(cfg.APIReader)),
		nsWrites: keymutex.NewHashed(0),
		throttle: &throttle{stamps: newStamps(cfg.Clock), interval: cfg.StatusInterval},
		fresh:    &freshVlans{stamps: newStamps(cfg.Clock)},
	}
	resync := max(cfg.Resync, 0)
	opts := func(name string) []engine.Option {
		o := []engine.Option{engine.WithName(name), engine.WithClock(cfg.Clock), engine.WithResync(resync),
			engine.WithLogger(cfg.Log), engine.WithWorkers(cfg.Workers)}
		if cfg.EngineMetrics != nil {
			o = append(o, engine.WithMetrics(cfg.EngineMetrics))
		}
		return o
	}
	if c.networks, err = engine.NewRunner(cfg.Client, func() *v1alpha1.ProxmoxNetwork { return &v1alpha1.ProxmoxNetwork{} },
		c.networkReconciler(), opts(NetworkRunner)...); err != nil {
		return nil, fmt.Errorf("cannot build the network controller: %w", err)
	}
	if c.zones, err = engine.NewRunner(cfg.Client, func() *v1alpha1.ProxmoxNetworkZone { return &v1alpha1.ProxmoxNetworkZone{} },
		c.zoneReconciler(), opts(ZoneRunner)...); err != nil {
		return nil, fmt.Errorf("cannot build the network controller: %w", err)
	}
	if c.namespaces, err = engine.NewRunner(cfg.Client, func() *corev1.Namespace { return &corev1.Namespace{} },
		engine.StepFunc[*corev1.Namespace](c.reconcileNamespace), opts(NamespaceRunner)...); err != nil {
		return nil, fmt.Errorf("cannot build the network controller: %w", err)
	}
	c.cache.OnChange(c.enqueueFor)
	return c, nil
}

// Cache returns the controller's cache.
func (c *Controller) Cache() *Cache { return c.cache }

// Metrics returns the metrics the controller records.
func (c *Controller) Metrics() *Metrics { return c.cfg.Metrics }

// Load fills the cache from the API reader: every Vlan, VLAN claim,
// ProxmoxNetwork, IPAddress and ProxmoxMachine. Call it once before the
// first reconcile; kinds the API server does not serve are skipped.
func (c *Controller) Load(ctx context.Context) error {
	return c.cache.Load(ctx, c.cfg.APIReader, c.cfg.MachineKinds)
}

// Run reconciles until ctx is cancelled.
func (c *Controller) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, run := range []func(context.Context) error{c.networks.Run, c.zones.Run, c.namespaces.Run} {
		wg.Go(func() { errs[i] = run(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Resync enqueues every network, zone and namespace.
func (c *Controller) Resync(ctx context.Context) error {
	return errors.Join(c.networks.Resync(ctx), c.zones.Resync(ctx), c.namespaces.Resync(ctx))
}

// Drain reconciles until no runner has a key due on the controller's clock,
// and returns how many reconciles ran. It fails with engine.ErrNotConverged
// after maxReconciles. It must not be called while Run runs.
func (c *Controller) Drain(ctx context.Context, maxReconciles int) (int, error) {
	return engine.DrainAll(ctx, maxReconciles, c.networks.Drain, c.zones.Drain, c.namespaces.Drain)
}

// NextDue returns when the earliest delayed reconcile becomes due.
func (c *Controller) NextDue() (time.Time, bool) {
	return engine.FirstDue(c.networks.NextDue, c.zones.NextDue, c.namespaces.NextDue)
}

// EnqueueNetwork asks for a network to be reconciled.
func (c *Controller) EnqueueNetwork(key Key) { c.networks.Enqueue(key) }

// EnqueueZone asks for a zone to be reconciled.
func (c *Controller) EnqueueZone(name string) { c.zones.Enqueue(Key{Name: name}) }

// now is the controller's clock reading.
func (c *Controller) now() time.Time { return c.cfg.Clock.Now() }

// enqueueAll enqueues keys on the network runner.
func (c *Controller) enqueueNetworks(keys []Key) {
	for _, k := range keys {
		c.networks.Enqueue(k)
	}
}

// keyOf is client.ObjectKeyFromObject.
func keyOf(o client.Object) Key { return client.ObjectKeyFromObject(o) }
