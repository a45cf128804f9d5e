package sim

import (
	"context"
	"errors"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
func (t *target) noteNode(o client.Object, gone bool) (old, updated metav1.Object) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if prev, known := t.nodes[o.GetName()]; known {
		old = prev
	}
	if gone {
		delete(t.nodes, o.GetName())
		return old, nil
	}
	m := nodeMeta(o)
	t.nodes[o.GetName()] = m
	return old, m
}

// nodeChanged hands a Node change to the controller, as its Node watch
// does (reconcilers.Set.NodeChanged).
func (h *Harness) nodeChanged(ctx context.Context, old, updated metav1.Object) {
	if h.set == nil {
		return // Start enqueues every network
	}
	if err := h.set.NodeChanged(ctx, old, updated); err != nil {
		h.watchErr = append(h.watchErr, err)
	}
}

// takeWatchErr returns, once, what went wrong mapping Node changes to
// networks since the last call.
func (h *Harness) takeWatchErr() error {
	err := errors.Join(h.watchErr...)
	h.watchErr = nil
	return err
}
