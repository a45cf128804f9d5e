package network

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/engine"
)

// Triple is one entry of the namespace annotation: "<bridge>/<vlan>/<pool>".
func Triple(bridge string, vlan int32, pool string) string {
	return bridge + "/" + strconv.Itoa(int(vlan)) + "/" + pool
}

// syncNamespace writes the namespace annotation from the cache, with self
// (the network being reconciled, whose status is not written yet) as it is
// in memory, or left out when released is set.
func (c *Controller) syncNamespace(ctx context.Context, namespace string, self *v1alpha1.ProxmoxNetwork, released ...bool) error {
	if self != nil {
		// What this pass knows of the network is the truth as far as the
		// controller can tell, written or not: other passes count it too.
		// Recording it (or dropping it once released) also updates the
		// cache's annotation index.
		c.cache.record(self.DeepCopy(), len(released) > 0 && released[0])
	}
	want := c.cache.namespaceAnnotationOf(namespace)
	ns := &corev1.Namespace{}
	if err := c.cfg.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("cannot get namespace %q: %w", namespace, err)
	}
	if have, ok := ns.Annotations[v1alpha1.AnnotationNamespaceNetworks]; have == want && ok == (want != "") {
		return nil
	}
	patch := client.MergeFrom(ns.DeepCopy())
	if want == "" {
		delete(ns.Annotations, v1alpha1.AnnotationNamespaceNetworks)
	} else {
		if ns.Annotations == nil {
			ns.Annotations = map[string]string{}
		}
		ns.Annotations[v1alpha1.AnnotationNamespaceNetworks] = want
	}
	if err := c.cfg.Client.Patch(ctx, ns, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cannot annotate namespace %q with its Proxmox networks: %w", namespace, err)
	}
	return nil
}

// reconcileNamespace keeps the annotation of one namespace; it catches
// networks that vanished without a pass of their own.
func (c *Controller) reconcileNamespace(ctx context.Context, s *engine.State[*corev1.Namespace]) (engine.Result, error) {
	if _, has := s.Object.Annotations[v1alpha1.AnnotationNamespaceNetworks]; !has && len(c.cache.namespaceNetworks(s.Object.Name)) == 0 {
		return engine.Result{}, nil
	}
	return engine.Result{}, c.syncNamespace(ctx, s.Object.Name, nil)
}
