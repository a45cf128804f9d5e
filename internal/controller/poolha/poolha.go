// Package poolha is the proxmox-network controller's pool HA: for the
// Machines of pools rendered with proxmox.ha (label
// capmox.LabelHA), it makes each worker VM a Proxmox VE HA resource
// once capmox has provisioned it and keeps the pool's VMs apart with one
// negative resource-affinity rule (package pveha); for a Machine being
// deleted, it removes the VM's HA resource and then releases Cluster API's
// pre-terminate hook (capmox.HookHA), so that capmox's destroy of
// the VM is not refused as HA-managed and the Machine does not hang in
// Deleting. A sweep removes what pveha made for Machines and pools that
// are gone or have HA off. The Proxmox token is the platform's pool HA
// token (pveacl's platform.ha), read from a Secret by name; it is never
// logged.
package poolha

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/pveha"
)

// Event reasons, on the Machine (HAResourceRemoved, HAFailed of a
// release, HADisabled) or its MachineDeployment (the others).
const (
	ReasonResourceAdded   engine.Reason = "HAResourceAdded"
	ReasonResourceRemoved engine.Reason = "HAResourceRemoved"
	ReasonNotEnoughNodes  engine.Reason = "HANotEnoughNodes"
	ReasonKeptApart       engine.Reason = "HAKeptApart"
	ReasonUnsupported     engine.Reason = "HAUnsupported"
	ReasonDisabled        engine.Reason = "HADisabled"
	ReasonFailed          engine.Reason = "HAFailed"
)

// EventActions are the events.k8s.io action of every reason
// (engine.EventsRecorder's Actions).
var EventActions = map[engine.Reason]string{
	ReasonResourceAdded: "PoolHA", ReasonResourceRemoved: "PoolHA", ReasonNotEnoughNodes: "PoolHA", ReasonKeptApart: "PoolHA",
	ReasonUnsupported: "PoolHA", ReasonDisabled: "PoolHA", ReasonFailed: "PoolHA",
}

// Requeue is how often a pool with HA is looked at again without a change.
const Requeue = 5 * time.Minute

// Reconciler is the pool HA step over Machines.
type Reconciler struct {
	// Client patches Machines and lists them from the informer the runner
	// watches them with; Reader reads ProxmoxMachines and
	// MachineDeployments uncached.
	Client client.Client
	Reader client.Reader
	// Proxmox returns the pool HA client; nil turns pool HA off.
	Proxmox func(context.Context) (pveapi.Client, error)
	Log     logr.Logger
}

var _ engine.Step[*clusterv1.Machine] = (*Reconciler)(nil)

// Reconcile releases the hook of a deleting Machine, or brings its pool's
// HA configuration to its Machines. Its Events go to the State's
// Recorder.
func (r *Reconciler) Reconcile(ctx context.Context, s *engine.State[*clusterv1.Machine]) (engine.Result, error) {
	m := s.Object
	_, hooked := m.Annotations[capmox.HookHA]
	if !m.DeletionTimestamp.IsZero() {
		if !hooked {
			return engine.Result{}, nil
		}
		return engine.Result{}, r.release(ctx, s)
	}
	if m.Labels[capmox.LabelHA] != "true" || m.Labels[capmox.LabelDeploymentName] == "" {
		return engine.Result{}, nil
	}
	if r.Proxmox == nil {
		s.Event(corev1.EventTypeWarning, ReasonDisabled, "the pool has proxmox.ha, but the controller runs without --proxmox-ha-credentials: its workers are not Proxmox HA resources")
		return engine.Result{}, nil
	}
	return engine.Result{RequeueAfter: Requeue}, r.pool(ctx, s)
}

// release removes the HA resource of the Machine's VM, then the hook.
func (r *Reconciler) release(ctx context.Context, s *engine.State[*clusterv1.Machine]) error {
	m := s.Object
	vmid, err := r.vmid(ctx, m)
	if err != nil {
		return err
	}
	if vmid > 0 && r.Proxmox != nil {
		c, err := r.Proxmox(ctx)
		if err != nil {
			return err
		}
		released, err := pveha.Release(ctx, c, vmid)
		if err != nil {
			s.Event(corev1.EventTypeWarning, ReasonFailed, err.Error())
			return err
		}
		if released {
			s.Event(corev1.EventTypeNormal, ReasonResourceRemoved, fmt.Sprintf("removed HA resource %s so that capmox can destroy the VM", pveha.SID(vmid)))
		}
	}
	patch := client.MergeFrom(m.DeepCopy())
	delete(m.Annotations, capmox.HookHA)
	if err := r.Client.Patch(ctx, m, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cannot release the pre-terminate hook %s: %w", capmox.HookHA, err)
	}
	r.Log.Info("released the pre-terminate hook", "machine", client.ObjectKeyFromObject(m), "vmid", vmid)
	return nil
}

// pool plans and applies the HA configuration of the Machine's pool; its
// Events regard the pool's MachineDeployment.
func (r *Reconciler) pool(ctx context.Context, s *engine.State[*clusterv1.Machine]) error {
	m := s.Object
	name := m.Labels[capmox.LabelDeploymentName]
	p, err := r.workers(ctx, m.Namespace, client.MatchingLabels{capmox.LabelHA: "true", capmox.LabelDeploymentName: name})
	if err != nil {
		return err
	}
	if len(p) == 0 {
		return nil
	}
	c, st, err := r.read(ctx)
	if err != nil {
		return err
	}
	// The MachineDeployment is read only when an Event names it.
	md := sync.OnceValue(func() client.Object { return r.deployment(ctx, m.Namespace, name) })
	event := func(typ string, reason engine.Reason, msg string) { s.Recorder.Event(md(), typ, reason, msg) }
	plan, err := pveha.NewPlan(st, p, pveha.Options{})
	if errors.Is(err, pveha.ErrUnsupported) {
		event(corev1.EventTypeWarning, ReasonUnsupported, err.Error()+": the pool's workers are not registered with Proxmox HA")
		return nil
	}
	if err != nil {
		return err
	}
	if err := pveha.Apply(ctx, c, plan); err != nil {
		event(corev1.EventTypeWarning, ReasonFailed, err.Error())
		return err
	}
	for _, ch := range plan.Changes {
		if ch.Op == pveha.AddResource {
			event(corev1.EventTypeNormal, ReasonResourceAdded, fmt.Sprintf("%s is an HA resource: %s", ch.SID, ch.Reason))
		}
	}
	for _, rep := range plan.Pools {
		switch {
		case rep.Short():
			event(corev1.EventTypeWarning, ReasonNotEnoughNodes, rep.String())
		case !plan.Empty():
			event(corev1.EventTypeNormal, ReasonKeptApart, rep.String())
		}
	}
	return nil
}

// Sweep removes the HA resources and rules pveha made for Machines and
// pools that are gone or have HA off, and brings every HA pool up to date.
func (r *Reconciler) Sweep(ctx context.Context) error {
	if r.Proxmox == nil {
		return nil
	}
	pools, err := r.workers(ctx, "", client.MatchingLabels{capmox.LabelHA: "true"})
	if err != nil {
		return err
	}
	c, st, err := r.read(ctx)
	if err != nil {
		return err
	}
	plan, err := pveha.NewPlan(st, pools, pveha.Options{Prune: true})
	if errors.Is(err, pveha.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, ch := range plan.Changes {
		r.Log.Info("pool HA sweep", "change", ch.String())
	}
	return pveha.Apply(ctx, c, plan)
}

// read builds the pool HA client and reads the cluster's HA configuration.
func (r *Reconciler) read(ctx context.Context) (pveapi.Client, *pveha.State, error) {
	c, err := r.Proxmox(ctx)
	if err != nil {
		return nil, nil, err
	}
	st, err := pveha.Read(ctx, c)
	return c, st, err
}

// RunSweeps sweeps every interval until ctx ends.
func (r *Reconciler) RunSweeps(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := r.Sweep(ctx); err != nil && ctx.Err() == nil {
			r.Log.Error(err, "pool HA sweep failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// workers lists the Machines selected (in one namespace, or all) and
// groups the provisioned ones that are not being deleted by pool, oldest
// first. A Machine counts once Cluster API reports its infrastructure
// provisioned: capmox has then configured and started the VM, and an HA
// resource (requested state started) can no longer start it early.
func (r *Reconciler) workers(ctx context.Context, ns string, sel client.MatchingLabels) ([]pveha.Pool, error) {
	list := &clusterv1.MachineList{}
	opts := []client.ListOption{sel}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := r.Client.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("cannot list Machines: %w", err)
	}
	slices.SortFunc(list.Items, func(a, b clusterv1.Machine) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	byPool := map[string]*pveha.Pool{}
	var names []string
	for i := range list.Items {
		m := &list.Items[i]
		pool := m.Labels[capmox.LabelDeploymentName]
		if pool == "" || !m.DeletionTimestamp.IsZero() || !provisioned(m) {
			continue
		}
		vmid, err := r.vmid(ctx, m)
		if err != nil {
			return nil, err
		}
		if vmid == 0 {
			continue
		}
		key := m.Namespace + "/" + pool
		if byPool[key] == nil {
			byPool[key] = &pveha.Pool{Name: key}
			names = append(names, key)
		}
		byPool[key].Workers = append(byPool[key].Workers, pveha.Worker{Machine: m.Namespace + "/" + m.Name, VMID: vmid})
	}
	out := make([]pveha.Pool, 0, len(names))
	for _, n := range names {
		out = append(out, *byPool[n])
	}
	return out, nil
}

func provisioned(m *clusterv1.Machine) bool {
	i := m.Status.Initialization
	return i.InfrastructureProvisioned != nil && *i.InfrastructureProvisioned
}

// vmid reads the VM id capmox gave the Machine's ProxmoxMachine
// (spec.virtualMachineID, the same in v1alpha1 and v1alpha2); 0 when there
// is none (yet) or the ProxmoxMachine is gone.
func (r *Reconciler) vmid(ctx context.Context, m *clusterv1.Machine) (int, error) {
	ref := m.Spec.InfrastructureRef
	if ref.Kind != capmox.KindProxmoxMachine || ref.APIGroup != capmox.Group || ref.Name == "" {
		return 0, nil
	}
	for _, gvk := range slices.Backward(network.MachineKinds) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		err := r.Reader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}, u)
		switch {
		case meta.IsNoMatchError(err):
			continue
		case apierrors.IsNotFound(err):
			return 0, nil
		case err != nil:
			return 0, fmt.Errorf("cannot read ProxmoxMachine %s/%s: %w", m.Namespace, ref.Name, err)
		}
		id, _, err := unstructured.NestedInt64(u.Object, "spec", "virtualMachineID")
		if err != nil {
			return 0, fmt.Errorf("ProxmoxMachine %s/%s: spec.virtualMachineID: %w", m.Namespace, ref.Name, err)
		}
		return int(id), nil
	}
	return 0, nil
}

// deployment returns the pool's MachineDeployment for its Events, or a
// reference by name when it cannot be read.
func (r *Reconciler) deployment(ctx context.Context, ns, name string) client.Object {
	md := &clusterv1.MachineDeployment{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, md); err != nil {
		md.Namespace, md.Name = ns, name
		md.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("MachineDeployment"))
	}
	return md
}
