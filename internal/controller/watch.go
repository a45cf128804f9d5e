package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubenetgateway"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/reconcilers"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// watch feeds the reconcilers from the informers of every kind they
// watch (reconcilers.Set.Watched: the network controller's, those of its
// optional kinds the API server serves, Machines and IPAddressClaims when
// their runners run), and, when gateways are managed, hands them each Node
// event (reconcilers.Set.NodeChanged).
func (p *Process) watch(ctx context.Context, set *reconcilers.Set) error {
	if err := network.Watch(ctx, p.mgr.GetCache(), set, set.Watched()...); err != nil {
		return fmt.Errorf("cannot watch the controller's kinds (are the Kube-OVN, in-cluster IPAM and proxmox.cozystack.io CRDs installed?): %w", err)
	}
	if !set.ManagesGateways() {
		return nil
	}
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(kubenetgateway.NodeGVK)
	inf, err := p.mgr.GetCache().GetInformer(ctx, node)
	if err != nil {
		return fmt.Errorf("cannot watch Nodes: %w", err)
	}
	if _, err := inf.AddEventHandler(p.nodeHandler(set)); err != nil {
		return fmt.Errorf("cannot watch Nodes: %w", err)
	}
	return nil
}

// nodeHandler hands each Node event to the reconcilers, as the metadata of
// the Node before and after (nil when it appears or goes).
func (p *Process) nodeHandler(set *reconcilers.Set) toolscache.ResourceEventHandlerFuncs {
	on := func(old, updated metav1.Object) {
		if err := set.NodeChanged(context.Background(), old, updated); err != nil {
			p.log.Error(err, "cannot reconcile the networks a Node change concerns; the next resync does")
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { onObject(o, func(m metav1.Object) { on(nil, m) }) },
		UpdateFunc: func(o, n any) {
			onObject(o, func(old metav1.Object) { onObject(n, func(m metav1.Object) { on(old, m) }) })
		},
		DeleteFunc: func(o any) { onObject(o, func(m metav1.Object) { on(m, nil) }) },
	}
}

// onObject calls f with o's metadata, unwrapping a tombstone.
func onObject(o any, f func(metav1.Object)) {
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = tomb.Obj
	}
	if m, err := meta.Accessor(o); err == nil {
		f(m)
	}
}
