package sim

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/network"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
)

// TrunkNode returns a Node that carries the trunk of providerNetwork as
// Kube-OVN marks it: the provider network's ready label set to "true" and
// the node's OVN chassis in the ovn.kubernetes.io/chassis annotation.
func TrunkNode(name, providerNetwork, chassis string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{kubegateway.ReadyLabel(providerNetwork): "true"},
		Annotations: map[string]string{kubegateway.ChassisAnnotation: chassis},
	}}
}

// nodeMeta is what a Node change is judged on.
func nodeMeta(o client.Object) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{
		Name:              o.GetName(),
		Labels:            maps.Clone(o.GetLabels()),
		Annotations:       maps.Clone(o.GetAnnotations()),
		DeletionTimestamp: o.GetDeletionTimestamp(),
	}
}

func isNode(o client.Object) bool {
	switch u := o.(type) {
	case *corev1.Node:
		return true
	case *unstructured.Unstructured:
		return u.GetKind() == "Node" && u.GetAPIVersion() == "v1"
	}
	return false
}

// noteNode records a Node as last seen and reports the change: old is nil
// for a Node not seen before, updated is nil for one that is gone.
func (t *target) noteNode(o client.Object, gone bool) (old, updated metav1.Object, known bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev, known := t.nodes[o.GetName()]
	if known {
		old = prev
	}
	if gone {
		delete(t.nodes, o.GetName())
		return old, nil, known
	}
	m := nodeMeta(o)
	t.nodes[o.GetName()] = m
	return old, m, known
}

// nodeChanged re-reconciles the networks whose gateway a Node change may
// concern, as the controller's Node watch does: those of the zones on a
// provider network whose chassis set the change may alter. A Node not seen
// before concerns every zone.
func (h *Harness) nodeChanged(ctx context.Context, old, updated metav1.Object, known bool) {
	if h.ctrl == nil {
		return // Start enqueues every network
	}
	var zones v1alpha1.ProxmoxNetworkZoneList
	var nets v1alpha1.ProxmoxNetworkList
	for _, l := range []client.ObjectList{&zones, &nets} {
		if err := h.store.List(ctx, l); err != nil {
			h.watchErr = append(h.watchErr, fmt.Errorf("cannot find the networks a change of Node %q concerns: %w", nameOf(old, updated), err))
			return
		}
	}
	affected := map[string]bool{}
	for _, z := range zones.Items {
		if !known || chassisSetMayChange(z.Spec.ProviderNetwork, old, updated) {
			affected[z.Name] = true
		}
	}
	for _, n := range nets.Items {
		if affected[n.Spec.Zone] {
			h.ctrl.EnqueueNetwork(network.Key{Namespace: n.Namespace, Name: n.Name})
		}
	}
}

// chassisSetMayChange reports whether a Node event (old or updated nil for a
// Node that appears or goes) can change the chassis set of provider.
func chassisSetMayChange(provider string, old, updated metav1.Object) bool {
	ready := func(n metav1.Object) bool { return n.GetLabels()[kubegateway.ReadyLabel(provider)] == "true" }
	switch {
	case old == nil && updated == nil:
		return false
	case old == nil:
		return ready(updated)
	case updated == nil:
		return ready(old)
	}
	return kubegateway.NodeChanged(provider, old, updated)
}

func nameOf(old, updated metav1.Object) string {
	if updated != nil {
		return updated.GetName()
	}
	return old.GetName()
}

// takeWatchErr returns, once, what went wrong mapping Node changes to
// networks since the last call.
func (h *Harness) takeWatchErr() error {
	err := errors.Join(h.watchErr...)
	h.watchErr = nil
	return err
}
