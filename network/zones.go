package network

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

// zoneState is the allocator of one zone, built from the zone's spec and the
// cache's Vlans and claims, and rebuilt only when the spec changes.
type zoneState struct {
	fingerprint string
	zone        *vlanalloc.Zone
	alloc       *vlanalloc.Allocator
	err         error
}

// zoneFingerprint identifies the allocation-relevant part of a zone spec.
func zoneFingerprint(z *v1alpha1.ProxmoxNetworkZone) string {
	b, err := json.Marshal(struct {
		UID  string
		Spec v1alpha1.ProxmoxNetworkZoneSpec
	}{string(z.UID), z.Spec})
	if err != nil { // a spec of plain values always marshals
		return fmt.Sprintf("%s/%d", z.UID, z.Generation)
	}
	return string(b)
}

// allocator returns the allocator of zone obj, building it from the cache's
// observed Vlans and claims the first time and whenever the spec changed.
// A spec that does not parse gives its error, with the allocator nil.
func (c *Cache) allocator(obj *v1alpha1.ProxmoxNetworkZone, store vlanalloc.Reserver) (*zoneState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	obj = withheldZone(obj, c.withheldOf(obj))
	fp := zoneFingerprint(obj)
	if z, ok := c.zones[obj.Name]; ok && z.fingerprint == fp {
		return z, z.err
	}
	z := &zoneState{fingerprint: fp}
	z.zone, z.err = kubestore.ZoneFromAPI(obj)
	if z.err == nil {
		vlans := make([]vlanalloc.Vlan, 0, len(c.vlans))
		for _, v := range c.vlans {
			vlans = append(vlans, v.Vlan)
		}
		var res []vlanalloc.Reservation
		for _, ci := range c.claims {
			if ci.Provider == z.zone.ProviderNetwork() {
				res = append(res, ci.R)
			}
		}
		z.alloc = vlanalloc.NewAllocator(vlanalloc.NewIndex(z.zone, vlans, res), store)
	}
	c.zones[obj.Name] = z
	return z, z.err
}

// withheldZone returns the zone with the VLANs its Proxmox nodes cannot
// carry added to its reserved IDs (a static assignment keeps its VLAN), so
// the allocator hands none of them out; obj itself is not changed.
func withheldZone(obj *v1alpha1.ProxmoxNetworkZone, withheld string) *v1alpha1.ProxmoxNetworkZone {
	if withheld == "" {
		return obj
	}
	set, err := vlanalloc.ParseRanges(strings.Split(withheld, ","))
	if err != nil {
		return obj
	}
	static := map[int]bool{}
	for _, s := range obj.Spec.StaticAssignments {
		static[int(s.VLAN)] = true
	}
	out := obj.DeepCopy()
	for _, vid := range set.IDs() {
		if !static[vid] {
			out.Spec.ReservedVLANs = append(out.Spec.ReservedVLANs, int32(vid))
		}
	}
	return out
}

// withheldOf returns the zone's withheld VLANs as runs; a zone whose
// Proxmox nodes are to be checked but were not yet withholds every VLAN.
// The caller holds c.mu.
func (c *Cache) withheldOf(obj *v1alpha1.ProxmoxNetworkZone) string {
	if w, ok := c.withheld[obj.Name]; ok {
		return w
	}
	if !c.checkZones || obj.Spec.SDN == nil || obj.Spec.SDN.CredentialsRef == nil {
		return ""
	}
	reserved := make([]int, 0, len(obj.Spec.ReservedVLANs))
	for _, r := range obj.Spec.ReservedVLANs {
		reserved = append(reserved, int(r))
	}
	all, err := vlanalloc.Allocatable(obj.Spec.VLANRanges, reserved)
	if err != nil {
		return ""
	}
	return all.String()
}

// setWithheld records the VLANs of a zone its Proxmox nodes cannot carry
// (the zone's allocator is rebuilt without them) and reports whether they
// changed.
func (c *Cache) setWithheld(zone string, set vlanalloc.Set) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.withheld == nil {
		c.withheld = map[string]string{}
	}
	prev, had := c.withheld[zone]
	c.withheld[zone] = set.String()
	return !had || prev != set.String()
}

// dropZone forgets the allocator of a zone that is gone.
func (c *Cache) dropZone(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.zones, name)
}

// zoneSpecChanged reports whether obj's spec differs from the one the zone's
// allocator was built from (true when none was built yet).
func (c *Cache) zoneSpecChanged(obj *v1alpha1.ProxmoxNetworkZone) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	fp := zoneFingerprint(withheldZone(obj, c.withheldOf(obj)))
	z, ok := c.zones[obj.Name]
	return !ok || z.fingerprint != fp
}

// reserves reports whether any zone's allocator holds a reservation of
// network (from a claim, or from a write whose answer was lost).
func (c *Cache) reserves(network v1alpha1.NetworkReference) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, z := range c.zones {
		if z.alloc != nil && len(z.alloc.Index().Reservations(vlanalloc.NetworkRef(network))) > 0 {
			return true
		}
	}
	return false
}

// dropReservations forgets the reservations of network in every zone's
// allocator. Call it once the network's claims are deleted: what is left is
// a reservation whose write failed, which no claim backs.
func (c *Cache) dropReservations(network v1alpha1.NetworkReference) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, z := range c.zones {
		if z.alloc != nil {
			z.alloc.Index().Release(vlanalloc.NetworkRef(network))
		}
	}
}
