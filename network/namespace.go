package network

import (
	"context"
	"fmt"
	"strconv"
	"time"

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

// VNetEntry is the entry of the namespace annotation that a network whose
// zone gives its VLAN a Proxmox SDN VNet adds next to its triple:
// "<vnet>/<pool>".
func VNetEntry(vnet, pool string) string { return vnet + "/" + pool }

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
	ns, err := c.namespace(ctx, namespace)
	if ns == nil || err != nil {
		return err
	}
	return c.writeAnnotation(ctx, ns)
}

// publishNamespace records what this pass knows of network n in the cache
// and writes its namespace's annotation only when the write cannot wait:
// n is about to report Ready and its entries are not all listed yet (Ready never
// reaches the API before the annotation), or the annotation lists a triple
// no network of the namespace holds any more (it never lists a VLAN the
// namespace does not own). Any other change, such as the triples of
// networks that are not Ready yet, is left to the namespace runner, which
// writes the annotation once for every pass that changed it meanwhile: a
// burst of new networks in one namespace costs a few annotation writes
// instead of one each, whatever the size of the namespace.
//
// A network of such a burst (its Vlan created within FreshVLANHold) that is
// about to report Ready does not write the annotation itself either: it
// returns how long its status should be held (StatusInterval at most, the
// longest the namespace runner waits), and the runner's next write lists
// it. Once the Vlan is no longer fresh, the pass writes at once.
func (c *Controller) publishNamespace(ctx context.Context, n *v1alpha1.ProxmoxNetwork, ready bool) (hold time.Duration, err error) {
	c.cache.record(n.DeepCopy(), false)
	ns, err := c.namespace(ctx, n.Namespace)
	if ns == nil || err != nil {
		return 0, err
	}
	have, ok := ns.Annotations[v1alpha1.AnnotationNamespaceNetworks]
	var mine []string
	if info, known := c.cache.network(keyOf(n)); known {
		mine = annotationEntries(info)
	}
	stale, complete, listsMine := c.cache.annotationState(n.Namespace, have, mine)
	empty := ok && have == "" // an annotation that lists nothing goes
	if complete && !empty {
		return 0, nil
	}
	mustList := ready && len(mine) > 0 && !listsMine
	if mustList && !stale && !empty && c.cfg.StatusInterval > 0 {
		hold = min(c.fresh.hold(n.Status.VLANName), c.cfg.StatusInterval)
	}
	if hold <= 0 && (stale || empty || mustList) {
		return 0, c.writeAnnotation(ctx, ns)
	}
	c.namespaces.Enqueue(Key{Name: n.Namespace})
	return hold, nil
}

// namespace reads a namespace; nil without an error when it does not exist.
func (c *Controller) namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	if err := c.cfg.Client.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot get namespace %q: %w", name, err)
	}
	return ns, nil
}

// writeAnnotation patches ns so that its annotation lists the triples the
// cache holds for it ("" removes it), unless it already does. Writes to one
// namespace take turns, and each computes its value when its turn comes:
// the last write lists every triple recorded before it, so a slower pass
// that computed its value earlier cannot overwrite a newer annotation (a
// Ready network would be left unlisted).
func (c *Controller) writeAnnotation(ctx context.Context, ns *corev1.Namespace) error {
	c.nsWrites.LockKey(ns.Name)
	defer func() { _ = c.nsWrites.UnlockKey(ns.Name) }()
	want := c.cache.namespaceAnnotationOf(ns.Name)
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
		return fmt.Errorf("cannot annotate namespace %q with its Proxmox networks: %w", ns.Name, err)
	}
	return nil
}

// reconcileNamespace keeps the annotation of one namespace; it catches
// networks that vanished without a pass of their own.
func (c *Controller) reconcileNamespace(ctx context.Context, s *engine.State[*corev1.Namespace]) (engine.Result, error) {
	if _, has := s.Object.Annotations[v1alpha1.AnnotationNamespaceNetworks]; !has && len(c.cache.namespaceNetworks(s.Object.Name)) == 0 {
		return engine.Result{}, nil
	}
	if wait := c.throttle.wait("namespace/" + s.Object.Name); wait > 0 {
		return engine.Result{RequeueAfter: wait}, nil
	}
	return engine.Result{}, c.syncNamespace(ctx, s.Object.Name, nil)
}
