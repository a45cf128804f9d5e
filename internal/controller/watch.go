package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	capiipam "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubenetgateway"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// watch feeds the controller's cache from the informers of every kind it
// indexes, and, when gateways are managed, re-reconciles the networks of a
// provider network whose chassis set a Node event may change. Kinds that
// only some clusters serve (Cluster API's IPAddress, each ProxmoxMachine
// version) are watched when the API server serves them.
func (p *Process) watch(ctx context.Context, ctrl *network.Controller, nodes bool) error {
	examples := []client.Object{
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
		served, err := p.served(o)
		if err != nil {
			return err
		}
		if served {
			examples = append(examples, o)
		}
	}
	if err := network.Watch(ctx, p.mgr.GetCache(), ctrl.Cache(), examples...); err != nil {
		return fmt.Errorf("cannot watch the controller's kinds (are the Kube-OVN, in-cluster IPAM and proxmox.cozystack.io CRDs installed?): %w", err)
	}
	if !nodes {
		return nil
	}
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(kubenetgateway.NodeGVK)
	inf, err := p.mgr.GetCache().GetInformer(ctx, node)
	if err != nil {
		return fmt.Errorf("cannot watch Nodes: %w", err)
	}
	if _, err := inf.AddEventHandler(nodeHandler(p.mgr.GetClient(), ctrl)); err != nil {
		return fmt.Errorf("cannot watch Nodes: %w", err)
	}
	return nil
}

// served reports whether the API server serves o's kind.
func (p *Process) served(o client.Object) (bool, error) {
	gvk, err := p.mgr.GetClient().GroupVersionKindFor(o)
	if err != nil {
		return false, fmt.Errorf("cannot find the kind of %T: %w", o, err)
	}
	_, err = p.mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		p.log.Info("not watching a kind the API server does not serve", "kind", gvk.String())
		return false, nil
	}
	return false, fmt.Errorf("cannot tell whether the API server serves %s: %w", gvk, err)
}

// enqueuer is the part of *network.Controller nodeHandler uses.
type enqueuer interface{ EnqueueNetwork(network.Key) }

// nodeHandler maps Node events to the networks whose gateway may change:
// those of the zones on a provider network the event concerns (see
// kubenetgateway.ChangedProviders). Zones and networks are read from the cache.
func nodeHandler(r client.Reader, q enqueuer) toolscache.ResourceEventHandlerFuncs {
	on := func(old, updated metav1.Object) {
		ctx := context.Background()
		var zones v1alpha1.ProxmoxNetworkZoneList
		if err := r.List(ctx, &zones); err != nil {
			return
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
			return
		}
		var nets v1alpha1.ProxmoxNetworkList
		if err := r.List(ctx, &nets); err != nil {
			return
		}
		for _, n := range nets.Items {
			if slices.Contains(affected, n.Spec.Zone) {
				q.EnqueueNetwork(client.ObjectKeyFromObject(&n))
			}
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
