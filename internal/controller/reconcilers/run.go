package reconcilers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubenetgateway"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/vpcipam"
)

// Observe takes an object that was created or changed: the network
// controller's cache records it, and the runner of its kind reconciles it.
func (s *Set) Observe(o client.Object) {
	s.network.Cache().Observe(o)
	s.enqueue(o)
}

// Forget takes an object that is gone.
func (s *Set) Forget(o client.Object) {
	s.network.Cache().Forget(o)
	s.enqueue(o)
}

// The kinds of the runners besides the network controller.
var (
	machineKind = clusterv1.GroupVersion.WithKind("Machine").GroupKind()
	claimKind   = capiipam.GroupVersion.WithKind("IPAddressClaim").GroupKind()
	poolKind    = clusterv1.GroupVersion.WithKind("MachineDeployment").GroupKind()
)

// enqueue hands a Machine to pool HA, an IPAddressClaim to the VPC
// address runner (a subnet claim to the claim it serves) and a
// MachineDeployment to pool healing.
func (s *Set) enqueue(o client.Object) {
	switch kindOf(o) {
	case machineKind:
		if s.poolHA != nil {
			s.poolHA.Enqueue(client.ObjectKeyFromObject(o))
		}
	case claimKind:
		if s.vpc != nil {
			for _, k := range vpcipam.SubnetClaimOwner(o) {
				s.vpc.Enqueue(k)
			}
		}
	case poolKind:
		if s.heal != nil {
			s.heal.Enqueue(client.ObjectKeyFromObject(o))
		}
		if s.spread != nil {
			s.spread.Enqueue(client.ObjectKeyFromObject(o))
		}
	}
}

// kindOf is the kind of a runner's object, typed or not; the zero kind
// for any other.
func kindOf(o client.Object) schema.GroupKind {
	switch o.(type) {
	case *clusterv1.Machine:
		return machineKind
	case *capiipam.IPAddressClaim:
		return claimKind
	case *clusterv1.MachineDeployment:
		return poolKind
	case *unstructured.Unstructured:
		return o.GetObjectKind().GroupVersionKind().GroupKind()
	}
	return schema.GroupKind{}
}

// NodeChanged reconciles again the networks whose gateway a Node event
// may change (old nil: the Node appeared; updated nil: it is gone): those
// of the zones on a provider network whose chassis set the event may
// change (kubenetgateway.ChangedProviders). Zones and networks are read
// through Client. Without gateways it does nothing.
func (s *Set) NodeChanged(ctx context.Context, old, updated metav1.Object) error {
	if !s.gateways {
		return nil
	}
	var zones v1alpha1.ProxmoxNetworkZoneList
	if err := s.cfg.Client.List(ctx, &zones); err != nil {
		return fmt.Errorf("cannot find the networks a Node change concerns: %w", err)
	}
	providers := map[string][]string{}
	for _, z := range zones.Items {
		providers[z.Spec.ProviderNetwork] = append(providers[z.Spec.ProviderNetwork], z.Name)
	}
	var affected []string
	for _, p := range kubenetgateway.ChangedProviders(slices.Sorted(maps.Keys(providers)), old, updated) {
		affected = append(affected, providers[p]...)
	}
	if len(affected) == 0 {
		return nil
	}
	var nets v1alpha1.ProxmoxNetworkList
	if err := s.cfg.Client.List(ctx, &nets); err != nil {
		return fmt.Errorf("cannot find the networks a Node change concerns: %w", err)
	}
	for _, n := range nets.Items {
		if slices.Contains(affected, n.Spec.Zone) {
			s.network.EnqueueNetwork(client.ObjectKeyFromObject(&n))
		}
	}
	return nil
}

// routerPort reconciles at once the networks whose last pass found the
// router port that appeared missing.
func (s *Set) routerPort(name string) {
	if s.gateway == nil {
		return
	}
	for _, k := range s.gateway.RouterPortAppeared(name) {
		s.network.EnqueueNetwork(k)
	}
}

// Run reconciles until ctx ends: the network controller, pool HA and its
// sweeps, the VPC address runner, pool healing, what the NB client reports, and the
// gateway's garbage collection. It returns the errors of all of them.
func (s *Set) Run(ctx context.Context) error {
	runs := []func(context.Context) error{s.network.Run}
	if s.poolHA != nil {
		runs = append(runs, s.poolHA.Run)
		if s.cfg.PoolHASweep > 0 {
			runs = append(runs, func(ctx context.Context) error { return s.sweeper.RunSweeps(ctx, s.cfg.PoolHASweep) })
		}
	}
	if s.vpc != nil {
		runs = append(runs, s.vpc.Run)
	}
	if s.heal != nil {
		runs = append(runs, s.heal.Run)
	}
	if s.spread != nil {
		runs = append(runs, s.spread.Run)
	}
	if s.cfg.NBEvents != nil {
		runs = append(runs, s.runNBEvents)
	}
	if s.collector != nil {
		runs = append(runs, s.collector.Run)
	}
	return runTogether(ctx, runs...)
}

// runNBEvents handles what the NB client reports until ctx ends: every
// network, zone and namespace again after a reconnect, the waiting
// networks of each router port that appears.
func (s *Set) runNBEvents(ctx context.Context) error {
	e := s.cfg.NBEvents
	go func() {
		<-ctx.Done()
		e.ports.ShutDown()
	}()
	go func() {
		for {
			name, shutdown := e.ports.Get()
			if shutdown {
				return
			}
			s.routerPort(name)
			e.ports.Done(name)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-e.reconnected:
			s.reconnected(ctx)
		}
	}
}

func (s *Set) reconnected(ctx context.Context) {
	s.cfg.Log.Info("the OVN NB connection is back: reconciling every network")
	if err := s.network.Resync(ctx); err != nil && ctx.Err() == nil {
		s.cfg.Log.Error(err, "cannot enqueue every network after the NB reconnected")
	}
}

// Resync enqueues every object of every runner.
func (s *Set) Resync(ctx context.Context) error {
	errs := []error{s.network.Resync(ctx)}
	if s.poolHA != nil {
		errs = append(errs, s.poolHA.Resync(ctx))
	}
	if s.vpc != nil {
		errs = append(errs, s.vpc.Resync(ctx))
	}
	if s.heal != nil {
		errs = append(errs, s.heal.Resync(ctx))
	}
	return errors.Join(errs...)
}

// Drain takes what the NB client reported, then reconciles until no runner
// has a key due on the Set's clock, and returns how many reconciles ran.
// It fails with engine.ErrNotConverged after maxReconciles. It must not be
// called while Run runs.
func (s *Set) Drain(ctx context.Context, maxReconciles int) (int, error) {
	drains := []func(context.Context, int) (int, error){s.takeNBEvents, s.network.Drain}
	if s.poolHA != nil {
		drains = append(drains, s.poolHA.Drain)
	}
	if s.vpc != nil {
		drains = append(drains, s.vpc.Drain)
	}
	if s.heal != nil {
		drains = append(drains, s.heal.Drain)
	}
	return engine.DrainAll(ctx, maxReconciles, drains...)
}

// takeNBEvents handles, without waiting, what the NB client reported: it
// enqueues and reconciles nothing itself.
func (s *Set) takeNBEvents(ctx context.Context, _ int) (int, error) {
	if e := s.cfg.NBEvents; e != nil {
		reconnected, ports := e.pending()
		if reconnected {
			s.reconnected(ctx)
		}
		for _, p := range ports {
			s.routerPort(p)
		}
	}
	return 0, nil
}

// NextDue returns when the earliest delayed reconcile of any runner
// becomes due.
func (s *Set) NextDue() (time.Time, bool) {
	dues := []func() (time.Time, bool){s.network.NextDue}
	if s.poolHA != nil {
		dues = append(dues, s.poolHA.NextDue)
	}
	if s.vpc != nil {
		dues = append(dues, s.vpc.NextDue)
	}
	if s.heal != nil {
		dues = append(dues, s.heal.NextDue)
	}
	return engine.FirstDue(dues...)
}

// served reports whether the API server serves o's kind, as the client's
// RESTMapper says; a kind the client's scheme does not know is not served.
func (s *Set) served(o client.Object) (bool, error) {
	gvk, err := s.cfg.Client.GroupVersionKindFor(o)
	if runtime.IsNotRegisteredError(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cannot find the kind of %T: %w", o, err)
	}
	_, err = s.cfg.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		s.cfg.Log.Info("not watching a kind the API server does not serve", "kind", gvk.String())
		return false, nil
	}
	return false, fmt.Errorf("cannot tell whether the API server serves %s: %w", gvk, err)
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

// watchless is a client as a client.WithWatch, so that network.Feed can
// wrap it; the Set never watches through it (informers do).
type watchless struct{ client.Client }

func (watchless) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("the controller's client does not watch; informers do")
}
