package network

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

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

// NamespaceAnnotation is the value of proxmox.cozystack.io/networks for a
// namespace's networks: the sorted, comma-separated triples of every network
// that holds a VLAN and is live or still draining (being deleted while it
// carries the network finalizer).
func namespaceAnnotation(nets []networkInfo) string {
	entries := make([]string, 0, len(nets))
	seen := map[string]bool{}
	for _, n := range nets {
		if n.VLAN == 0 || n.Bridge == "" || (n.Deleting && !n.Held) {
			continue
		}
		t := Triple(n.Bridge, n.VLAN, n.Pool)
		if !seen[t] {
			seen[t] = true
			entries = append(entries, t)
		}
	}
	sort.Strings(entries)
	return strings.Join(entries, ",")
}

// syncNamespace writes the namespace annotation from the cache, with self
// (the network being reconciled, whose status is not written yet) as it is
// in memory, or left out when released is set.
func (c *Controller) syncNamespace(ctx context.Context, namespace string, self *v1alpha1.ProxmoxNetwork, released ...bool) error {
	if self != nil {
		// What this pass knows of the network is the truth as far as the
		// controller can tell, written or not: other passes count it too.
		c.cache.record(self.DeepCopy(), len(released) > 0 && released[0])
	}
	nets := c.cache.networksIn(namespace)
	if self != nil {
		me := observeNetwork(self)
		kept := nets[:0]
		for _, n := range nets {
			if n.Key != me.Key {
				kept = append(kept, n)
			}
		}
		nets = kept
		if len(released) == 0 || !released[0] {
			nets = append(nets, me)
		}
	}
	want := namespaceAnnotation(nets)
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
