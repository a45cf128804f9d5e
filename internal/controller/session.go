package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubehypervisor"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubenetgateway"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/poolha"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/vpcipam"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

// session is what the leader runs: it builds the network controller (and,
// when gateways are managed, the NB client, the gateway adapter and the
// garbage collector), feeds the controller's cache from the informers,
// fills it from the API once, and reconciles until ctx ends.
func (p *Process) session(ctx context.Context) error {
	p.leader.Set(1)
	defer p.leader.Set(0)
	p.log.Info("leading: starting the reconcilers")
	// reconnected is poked by the NB client each time it connects again
	// (a new leader, or a database rebuilt empty: every network is
	// reconciled again); appeared hands it the router ports that appear.
	reconnected := make(chan struct{}, 1)
	var appeared portHook
	gw, collector, closeNB, err := p.gateway(ctx, reconnected, &appeared)
	if err != nil {
		return err
	}
	defer closeNB()
	rec, stopEvents, err := p.eventRecorder()
	if err != nil {
		return err
	}
	defer stopEvents()
	cache := network.NewCache()
	var c client.Client = interceptor.NewClient(watchless{p.mgr.GetClient()}, network.Feed(cache))
	if p.deps.Wrap != nil {
		c = p.deps.Wrap(c)
	}
	ctrl, err := network.New(network.Config{
		Client: c, APIReader: p.mgr.GetAPIReader(), Cache: cache, Gateway: gw,
		SubnetPruneTimeout: p.opts.SubnetPruneTimeout, Metrics: p.metrics, EngineMetrics: p.deps.Registry,
		Log: p.log.WithName("network"), Recorder: rec, Workers: p.opts.Workers,
		StatusInterval: network.DefaultStatusInterval,
		Hypervisor:     kubehypervisor.Hypervisor{Reader: p.mgr.GetAPIReader()},
	})
	if err != nil {
		return err
	}
	appeared.forward(gw, ctrl)
	if err := p.watch(ctx, ctrl, gw != nil); err != nil {
		return err
	}
	if err := ctrl.Load(ctx); err != nil {
		return fmt.Errorf("cannot load the controller's cache: %w", err)
	}
	runs, err := p.poolHA(ctx, rec)
	if err != nil {
		return err
	}
	vpc, err := p.vpcIPAM(ctx, rec)
	if err != nil {
		return err
	}
	runs = append(runs, vpc...)
	runs = append(runs, ctrl.Run, func(ctx context.Context) error {
		p.resyncOnReconnect(ctx, ctrl, reconnected)
		return nil
	})
	if collector != nil {
		runs = append(runs, collector.Run)
	}
	return runTogether(ctx, runs...)
}

// gateway builds, when gateways are managed, the NB client, the gateway
// adapter and its garbage collector; the returned function closes them.
func (p *Process) gateway(ctx context.Context, reconnected chan struct{}, appeared *portHook) (network.Gateway, *kubenetgateway.Collector, func(), error) {
	if !p.opts.ManageGatewayChassis {
		return nil, nil, func() {}, nil
	}
	nb, err := p.dialNB(ctx, func() { poke(reconnected) }, appeared.call)
	if err != nil {
		return nil, nil, nil, err
	}
	adapter, err := kubenetgateway.New(nb, p.mgr.GetClient())
	if err != nil {
		nb.Close()
		return nil, nil, nil, err
	}
	collector := &kubenetgateway.Collector{NB: nb, Reader: p.mgr.GetAPIReader(), Collected: p.metrics.GroupsCollected,
		Errors: p.metrics.NBErrors, Log: p.log.WithName("gateway-gc")}
	return adapter, collector, func() {
		appeared.set(nil)
		nb.Close()
	}, nil
}

// resyncOnReconnect enqueues every network, zone and namespace each time
// reconnected is poked, until ctx ends.
func (p *Process) resyncOnReconnect(ctx context.Context, ctrl *network.Controller, reconnected <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-reconnected:
			p.log.Info("the OVN NB connection is back: reconciling every network")
			if err := ctrl.Resync(ctx); err != nil && ctx.Err() == nil {
				p.log.Error(err, "cannot enqueue every network after the NB reconnected")
			}
		}
	}
}

// portHook forwards router port names to a function set once it exists;
// until then, and after set(nil), they are dropped (the resync and
// RetryAfter still reach the networks).
type portHook struct{ f atomic.Pointer[func(string)] }

func (h *portHook) set(f func(string)) {
	if f == nil {
		h.f.Store(nil)
		return
	}
	h.f.Store(&f)
}

// forward sends the router ports that appear to the gateway adapter, once
// the controller exists: the networks that found their port missing are
// reconciled at once.
func (h *portHook) forward(gw network.Gateway, ctrl *network.Controller) {
	adapter, ok := gw.(*kubenetgateway.Gateway)
	if !ok {
		return
	}
	h.set(func(name string) {
		for _, k := range adapter.RouterPortAppeared(name) {
			ctrl.EnqueueNetwork(k)
		}
	})
}

func (h *portHook) call(name string) {
	if f := h.f.Load(); f != nil {
		(*f)(name)
	}
}

// poke wakes the reader of ch unless a wake-up is pending already.
func poke(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// eventRecorder starts an events.k8s.io broadcaster to the API server for
// one session, reporting as ReportingController, and returns the
// session's one engine.Recorder over it: every reconciler records through
// it, with the actions of its reasons. stop delivers the events already
// queued, then stops the broadcaster's goroutines; call it after the
// reconcilers have returned.
func (p *Process) eventRecorder() (rec engine.Recorder, stop func(), err error) {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: p.cs.EventsV1()})
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), p.log.WithName("events")))
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("cannot start recording events: %w", err)
	}
	stop = func() {
		b.Shutdown()
		cancel()
	}
	actions := map[engine.Reason]string{}
	for _, a := range []map[engine.Reason]string{network.EventActions, poolha.EventActions, vpcipam.EventActions} {
		maps.Copy(actions, a)
	}
	return engine.EventsRecorder{Recorder: b.NewRecorder(p.mgr.GetScheme(), ReportingController), Actions: actions}, stop, nil
}

// dialNB builds the NB client, with TLS from the Secret named by
// --ovn-tls-secret; onReconnect is called each time it connects again,
// onRouterPort with each router port that appears. It connects in the background: passes report
// NBUnavailable until it is up.
func (p *Process) dialNB(ctx context.Context, onReconnect func(), onRouterPort func(string)) (*ovngateway.Client, error) {
	cfg := ovngateway.Config{
		Address: p.opts.OVNNBAddress, InactivityProbe: p.opts.NBInactivityProbe,
		ReconnectTimeout: p.opts.NBReconnectTimeout, MaxBackoff: p.opts.NBMaxBackoff,
		OnReconnect: onReconnect, OnRouterPort: onRouterPort,
	}
	if ref, ok := p.opts.TLSSecret(); ok {
		sec := &corev1.Secret{}
		if err := p.mgr.GetAPIReader().Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, sec); err != nil {
			return nil, fmt.Errorf("cannot read the OVN TLS Secret %s (--ovn-tls-secret): %w", ref, err)
		}
		tlsCfg, err := ovngateway.TLSConfigFromSecret(sec.Data)
		if err != nil {
			return nil, fmt.Errorf("cannot use the OVN TLS Secret %s (--ovn-tls-secret): %w", ref, err)
		}
		cfg.TLS = tlsCfg
	}
	nbLog := p.log.WithName("ovn-nb")
	cfg.Logger = &nbLog
	nb, err := ovngateway.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot build the OVN NB client (--ovn-nb-address %q): %w", p.opts.OVNNBAddress, err)
	}
	return nb, nil
}

// runTogether runs every function until ctx ends or one fails; then it
// stops the others and returns the errors.
func runTogether(ctx context.Context, runs ...func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(runs))
	for _, run := range runs {
		go func() {
			err := run(ctx)
			cancel()
			errs <- err
		}()
	}
	var all []error
	for range runs {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// watchless is the manager's client as a client.WithWatch, so that
// network.Feed can wrap it; the controller never watches through it.
type watchless struct{ client.Client }

func (watchless) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("the controller's client does not watch; informers do")
}

// vpcIPAM builds the runner that gives capmox v0.8+ workers on a VPC
// subnet their net0 address from the subnet's pool (package vpcipam), when
// the API server serves Cluster API's IPAddressClaims.
func (p *Process) vpcIPAM(ctx context.Context, rec engine.Recorder) ([]func(context.Context) error, error) {
	served, err := p.served(&ipamv1.IPAddressClaim{})
	if err != nil || !served {
		return nil, err
	}
	name := "vpc-ipam"
	runner, err := engine.NewRunner[*ipamv1.IPAddressClaim](p.mgr.GetClient(), func() *ipamv1.IPAddressClaim { return &ipamv1.IPAddressClaim{} },
		&vpcipam.Reconciler{Client: p.mgr.GetClient()},
		engine.WithName(name), engine.WithLogger(p.log.WithName(name)), engine.WithMetrics(p.deps.Registry), engine.WithRecorder(rec))
	if err != nil {
		return nil, err
	}
	if _, err := engine.Watch(ctx, p.mgr.GetCache(), &ipamv1.IPAddressClaim{}, runner, vpcipam.SubnetClaimOwner); err != nil {
		return nil, fmt.Errorf("cannot watch IPAddressClaims: %w", err)
	}
	return []func(context.Context) error{runner.Run}, nil
}

// poolHA builds the pool HA runner over Machines and its sweep, when the
// API server serves Cluster API's Machines.
func (p *Process) poolHA(ctx context.Context, rec engine.Recorder) ([]func(context.Context) error, error) {
	served, err := p.served(&clusterv1.Machine{})
	if err != nil || !served {
		return nil, err
	}
	r := &poolha.Reconciler{Client: p.mgr.GetClient(), Reader: p.mgr.GetAPIReader(), Log: p.log.WithName("pool-ha")}
	if ref, ok := p.opts.HASecret(); ok {
		r.Proxmox = func(ctx context.Context) (pveapi.Client, error) {
			return kubehypervisor.SecretClient(ctx, p.mgr.GetAPIReader(), ref.Namespace, ref.Name)
		}
	}
	runner, err := engine.NewRunner[*clusterv1.Machine](p.mgr.GetClient(), func() *clusterv1.Machine { return &clusterv1.Machine{} }, r,
		engine.WithName("pool-ha"), engine.WithLogger(p.log.WithName("pool-ha")), engine.WithMetrics(p.deps.Registry), engine.WithRecorder(rec))
	if err != nil {
		return nil, err
	}
	if _, err := engine.Watch(ctx, p.mgr.GetCache(), &clusterv1.Machine{}, runner, nil); err != nil {
		return nil, fmt.Errorf("cannot watch Machines: %w", err)
	}
	return []func(context.Context) error{runner.Run, func(ctx context.Context) error { return r.RunSweeps(ctx, p.opts.HASweep) }}, nil
}
