package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubehypervisor"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/reconcilers"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

// session is what the leader runs: the controller's reconcilers
// (package reconcilers, the assembly the simulator runs too), with, when
// gateways are managed, the NB client whose reports reach them, fed from
// the informers, filled from the API once, until ctx ends.
func (p *Process) session(ctx context.Context) error {
	p.leader.Set(1)
	defer p.leader.Set(0)
	p.log.Info("leading: starting the reconcilers")
	rec, stopEvents, err := p.eventRecorder()
	if err != nil {
		return err
	}
	defer stopEvents()
	cfg := reconcilers.Config{
		Client: p.mgr.GetClient(), APIReader: p.mgr.GetAPIReader(), Log: p.log, Recorder: rec,
		Registry: p.deps.Registry, Metrics: p.metrics, SubnetPruneTimeout: p.opts.SubnetPruneTimeout, Workers: p.opts.Workers,
		StatusInterval: network.DefaultStatusInterval, Hypervisor: kubehypervisor.Hypervisor{Reader: p.mgr.GetAPIReader()},
		PoolHASweep: p.opts.HASweep,
	}
	if p.deps.Wrap != nil {
		cfg.Wrap = func(c client.WithWatch) client.Client { return p.deps.Wrap(c) }
	}
	if ref, ok := p.opts.HASecret(); ok {
		cfg.PoolHAProxmox = func(ctx context.Context) (pveapi.Client, error) {
			return kubehypervisor.SecretClient(ctx, p.mgr.GetAPIReader(), ref.Namespace, ref.Name)
		}
	}
	if p.opts.PoolHealing != PoolHealingOff {
		cfg.PoolHealing = &reconcilers.PoolHealing{All: p.opts.PoolHealing == PoolHealingAll,
			Grace: p.opts.PoolHealingGrace, Interval: p.opts.PoolHealingInterval}
	}
	if p.opts.FailureDomains {
		cfg.FailureDomains = &reconcilers.FailureDomains{Interval: p.opts.FailureDomainsInterval}
	}
	if p.opts.ManageGatewayChassis {
		cfg.NBEvents = reconcilers.NewNBEvents()
		nb, err := p.dialNB(ctx, cfg.NBEvents.Reconnected, cfg.NBEvents.RouterPort)
		if err != nil {
			return err
		}
		defer nb.Close()
		cfg.NB = nb
	}
	set, err := reconcilers.New(cfg)
	if err != nil {
		return err
	}
	if err := p.watch(ctx, set); err != nil {
		return err
	}
	if err := set.Load(ctx); err != nil {
		return err
	}
	return set.Run(ctx)
}

// eventRecorder starts an events.k8s.io broadcaster to the API server for
// one session, reporting as ReportingController; the reconcilers adapt its
// recorder once (engine.EventsRecorder). stop delivers the events already
// queued, then stops the broadcaster's goroutines; call it after the
// reconcilers have returned.
func (p *Process) eventRecorder() (rec events.EventRecorder, stop func(), err error) {
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
	return b.NewRecorder(p.mgr.GetScheme(), ReportingController), stop, nil
}

// dialNB builds the NB client, with TLS from the Secret named by
// --ovn-tls-secret; onReconnect is called each time it connects again,
// onRouterPort with each router port that appears. It connects in the
// background: passes report NBUnavailable until it is up.
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
