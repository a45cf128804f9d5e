package network

import (
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/engine"
)

// Reasons of the events.k8s.io Events the controller emits on a
// ProxmoxNetwork, each once per transition of the network.
const (
	// EventVLANAllocated (Normal): the controller created the network's
	// Vlan with a fresh ID of its zone.
	EventVLANAllocated engine.Reason = "VLANAllocated"
	// EventVLANAdopted (Normal): the network took over a Vlan of its name
	// that already existed (one created before a crash, or by hand).
	EventVLANAdopted engine.Reason = "VLANAdopted"
	// EventZoneExhausted (Warning): the network waits, its zone has no free
	// VLAN. The same word as the VLANAllocated condition's reason.
	EventZoneExhausted engine.Reason = v1alpha1.ReasonZoneExhausted
	// EventNamespaceCapReached (Warning): the network waits, its namespace
	// holds as many VLANs of the zone as the zone's
	// maxNetworksPerNamespace allows. The same word as the VLANAllocated
	// condition's reason.
	EventNamespaceCapReached engine.Reason = v1alpha1.ReasonNamespaceCapReached
	// EventSubnetNotOwned (Warning): the network names a Subnet its
	// namespace does not own; nothing is allocated or adopted for it.
	EventSubnetNotOwned engine.Reason = ReasonSubnetNotOwned
	// EventVLANOutsideZone (Warning): the network names a Vlan it may not
	// adopt, one with an ID its zone does not hand out.
	EventVLANOutsideZone engine.Reason = ReasonVLANOutsideZone
	// EventDeletionHeld (Warning): the network is deleted but its pool
	// still has addresses or ProxmoxMachines use it.
	EventDeletionHeld engine.Reason = "DeletionHeld"
	// EventGatewayReleased (Normal): the network's HA chassis group is gone
	// from OVN NB.
	EventGatewayReleased engine.Reason = "GatewayReleased"
	// EventSubnetPruneTimeout (Warning): Kube-OVN did not prune the deleted
	// subnet from the Vlan within the prune timeout; the VLAN is released
	// anyway.
	EventSubnetPruneTimeout engine.Reason = "SubnetPruneTimeout"
	// EventVLANReleased (Normal): the network's Vlan and claim are gone, the
	// ID is back in its zone.
	EventVLANReleased engine.Reason = "VLANReleased"
	// EventNoFailover (Warning): the network's gateway group cannot fail
	// over (GatewayFailover=False/NoFailover); announced once per chassis
	// count.
	EventNoFailover engine.Reason = v1alpha1.ReasonNoFailover
)

// EventActions are the events.k8s.io action of each reason: what the
// controller did, or failed or refused to do (engine.EventsRecorder's
// Actions).
var EventActions = map[engine.Reason]string{
	EventVLANAllocated:       "Allocate",
	EventVLANAdopted:         "Adopt",
	EventZoneExhausted:       "Allocate",
	EventNamespaceCapReached: "Allocate",
	EventSubnetNotOwned:      "Adopt",
	EventVLANOutsideZone:     "Adopt",
	EventDeletionHeld:        "Delete",
	EventGatewayReleased:     "Release",
	EventSubnetPruneTimeout:  "Release",
	EventVLANReleased:        "Release",
	EventNoFailover:          "AssignGateway",
}

// What an event is about, for the memo: the VLAN a network holds, its
// wait for a free one, a held delete, and the three releases.
const (
	memoVLAN      = "vlan"
	memoExhausted = "exhausted"
	memoRefused   = "refused"
	memoHeld      = "held"
	memoGateway   = "gateway"
	memoPrune     = "prune"
	memoReleased  = "released"
	memoFailover  = "failover"
)

// eventMemo remembers, per network, what this process last announced, so
// that a pass on a stale read of the network (its status not yet showing
// the previous pass) or after a failed status write never repeats an
// event. After a restart the network's status and the objects it holds
// decide alone.
type eventMemo struct {
	mu sync.Mutex
	m  map[Key]memoEntry
}

type memoEntry struct {
	uid types.UID
	// seen holds a pair per kind of event announced: a network has one or
	// two, and a slice of them costs a fraction of a map.
	seen []memoValue
}

type memoValue struct{ what, value string }

// first records value for what of n and reports whether it differs from
// what was recorded before (nothing counts as different).
func (m *eventMemo) first(n metav1.Object, what, value string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[Key]memoEntry{}
	}
	k := Key{Namespace: n.GetNamespace(), Name: n.GetName()}
	e, ok := m.m[k]
	if !ok || e.uid != n.GetUID() {
		e = memoEntry{uid: n.GetUID()}
	}
	i := slices.IndexFunc(e.seen, func(v memoValue) bool { return v.what == what })
	if i < 0 {
		e.seen = append(e.seen, memoValue{what, value})
		m.m[k] = e
		return true
	}
	old := e.seen[i].value
	e.seen[i].value = value
	m.m[k] = e
	return old != value
}

// clear forgets what of n, so that the next occurrence is announced again.
func (m *eventMemo) clear(n metav1.Object, what string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := Key{Namespace: n.GetNamespace(), Name: n.GetName()}
	if e, ok := m.m[k]; ok && e.uid == n.GetUID() {
		e.seen = slices.DeleteFunc(e.seen, func(v memoValue) bool { return v.what == what })
		m.m[k] = e
	}
}

// forget drops a network that is gone.
func (m *eventMemo) forget(k Key) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, k)
}

// event records an event on the network; the message is never a format.
func (c *Controller) event(n *v1alpha1.ProxmoxNetwork, eventType string, reason engine.Reason, msg string) {
	if c.cfg.Recorder == nil {
		return
	}
	c.cfg.Recorder.Event(n, eventType, reason, msg)
}

// vlanEvent announces the VLAN a live network holds after its allocation:
// VLANAllocated when this pass created the Vlan, VLANAdopted when the Vlan
// existed already and the network's status (as read at the start of the
// pass, prevVLAN) did not show it yet.
func (c *Controller) vlanEvent(n *v1alpha1.ProxmoxNetwork, created bool, prevVLAN int32, vid int) {
	c.memo.clear(n, memoExhausted)
	c.memo.clear(n, memoRefused)
	fresh := c.memo.first(n, memoVLAN, fmt.Sprint(vid))
	switch {
	case created && fresh:
		c.event(n, corev1.EventTypeNormal, EventVLANAllocated, fmt.Sprintf("allocated VLAN %d on zone %s", vid, n.Spec.Zone))
	case !created && fresh && prevVLAN != int32(vid):
		c.event(n, corev1.EventTypeNormal, EventVLANAdopted, fmt.Sprintf("adopted VLAN %d on zone %s from the existing Kube-OVN Vlan %q", vid, n.Spec.Zone, n.Spec.Subnet))
	}
}

// refusalEvent announces a network that waits for a VLAN: ZoneExhausted or
// NamespaceCapReached once, when the VLANAllocated condition (prev, as read
// at the start of the pass) did not say so already.
func (c *Controller) refusalEvent(n *v1alpha1.ProxmoxNetwork, prev *metav1.Condition, reason, msg string) {
	if reason != v1alpha1.ReasonZoneExhausted && reason != v1alpha1.ReasonNamespaceCapReached {
		c.memo.clear(n, memoExhausted)
		return
	}
	if prev != nil && prev.Status == metav1.ConditionFalse && prev.Reason == reason {
		return
	}
	if c.memo.first(n, memoExhausted, reason) {
		c.event(n, corev1.EventTypeWarning, engine.Reason(reason), msg)
	}
}

// ownershipEvent announces a network refused an object it does not own,
// once per refusal: when VLANAllocated (prev) did not give that reason
// already. A Subnet that does not exist yet is waited for without one.
func (c *Controller) ownershipEvent(n *v1alpha1.ProxmoxNetwork, prev *metav1.Condition, r refusal) {
	if r.reason == ReasonSubnetNotFound {
		return
	}
	if prev != nil && prev.Status == metav1.ConditionFalse && prev.Reason == r.reason {
		return
	}
	if c.memo.first(n, memoRefused, r.reason) {
		c.event(n, corev1.EventTypeWarning, engine.Reason(r.reason), r.msg)
	}
}

// heldEvent announces a delete held by the network's consumers, once per
// hold: when Ready (prev) did not say InUse already.
func (c *Controller) heldEvent(n *v1alpha1.ProxmoxNetwork, prev *metav1.Condition, msg string) {
	if prev != nil && prev.Status == metav1.ConditionFalse && prev.Reason == v1alpha1.ReasonInUse {
		return
	}
	if c.memo.first(n, memoHeld, "") {
		c.event(n, corev1.EventTypeWarning, EventDeletionHeld, msg)
	}
}

// gatewayEvent announces the release of the network's gateway, unless Ready
// (prev) shows the delete already past it, waiting for the Vlan.
func (c *Controller) gatewayEvent(n *v1alpha1.ProxmoxNetwork, prev *metav1.Condition) {
	if prev != nil && prev.Status == metav1.ConditionFalse &&
		(prev.Reason == v1alpha1.ReasonSwitchDeleting || prev.Reason == v1alpha1.ReasonVLANStillReferenced) {
		return
	}
	if c.memo.first(n, memoGateway, "") {
		c.event(n, corev1.EventTypeNormal, EventGatewayReleased,
			fmt.Sprintf("released the HA chassis group of subnet %q in OVN NB", n.Spec.Subnet))
	}
}

// pruneTimeoutEvent announces that the VLAN is released on the prune
// timeout; the caller calls it only while the Vlan is not deleted yet.
func (c *Controller) pruneTimeoutEvent(n *v1alpha1.ProxmoxNetwork, vlan string, vid int, gone []string) {
	if c.memo.first(n, memoPrune, "") {
		c.event(n, corev1.EventTypeWarning, EventSubnetPruneTimeout,
			fmt.Sprintf("Kube-OVN did not prune deleted subnets %v from Vlan %q within %s; releasing VLAN %d anyway",
				gone, vlan, c.cfg.SubnetPruneTimeout, vid))
	}
}

// releasedEvent announces the VLAN back in the zone, after this pass deleted
// the network's Vlan or a claim of it (vid is that Vlan's or claim's ID).
func (c *Controller) releasedEvent(n *v1alpha1.ProxmoxNetwork, vid int) {
	if c.memo.first(n, memoReleased, "") {
		c.event(n, corev1.EventTypeNormal, EventVLANReleased, fmt.Sprintf("released VLAN %d to zone %s", vid, n.Spec.Zone))
	}
}

// condition returns a copy of the condition of type t, or nil.
func condition(conds []metav1.Condition, t string) *metav1.Condition {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		cp := *c
		return &cp
	}
	return nil
}
