package pvesdn

import (
	"context"
	"net/url"
	"sort"

	"github.com/samber/lo"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

// MaxPlanVLANs is the largest zone PlanVNets plans: every VNet is a Linux
// bridge (and, on a bridge that is not VLAN-aware, a veth pair and a
// second bridge) on every node, and every apply reloads all of them.
const MaxPlanVLANs = 1024

// VNet is one planned VNet.
type VNet struct {
	ID  string `json:"vnet"`
	Tag int    `json:"tag"`
}

// Plan is what PlanVNets found missing: the SDN zone (when it does not
// exist) and the VNets, in VLAN order.
type Plan struct {
	Zone       string `json:"zone"`
	Bridge     string `json:"bridge"`
	MTU        int    `json:"mtu,omitempty"`
	CreateZone bool   `json:"createZone"`
	Add        []VNet `json:"add"`
	// Present counts the zone's VNets that already exist as planned.
	Present  int `json:"present"`
	Requests int `json:"requests"`
	// present are the VNets (ID to tag) that exist as planned: a pending
	// creation of one of them, or of the zone, is this plan's own
	// unfinished change, which Apply takes along.
	present map[string]int
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool { return !p.CreateZone && len(p.Add) == 0 }

type sdnZoneFull struct {
	Zone   string `json:"zone"`
	Type   string `json:"type"`
	Bridge string `json:"bridge"`
	MTU    int    `json:"mtu"`
}

// readSDN reads the SDN zones and VNets (the configuration files, pending
// changes included).
func readSDN(ctx context.Context, g *getter) ([]sdnZoneFull, []sdnVNetEntry, error) {
	var zones []sdnZoneFull
	var vnets []sdnVNetEntry
	if err := g.get(ctx, "/cluster/sdn/zones", &zones); err != nil {
		return nil, nil, errorf("cannot read the SDN zones: %s", errText(err))
	}
	if err := g.get(ctx, "/cluster/sdn/vnets", &vnets); err != nil {
		return nil, nil, errorf("cannot read the SDN VNets: %s", errText(err))
	}
	return zones, vnets, nil
}

// PlanVNets plans the zone's Proxmox side of Phase 2: a VLAN zone
// z.SDNZone on the bridge and the VNet z.VNetID(v) with tag v for every
// zone VLAN v. It reads the SDN configuration (2 requests) and refuses a
// zone above MaxPlanVLANs, an SDN zone of that name that is not a VLAN
// zone on the bridge, and a VNet ID that exists with another tag or zone.
func PlanVNets(ctx context.Context, c pveapi.Client, z Zone) (*Plan, error) {
	if err := z.Validate(true); err != nil {
		return nil, err
	}
	if n := z.VLANs.Len(); n > MaxPlanVLANs {
		return nil, errorf("%w %q: %d VLANs; a VNet plan takes at most %d (each VNet is a bridge on every node, reloaded at every apply): split the zone",
			ErrInvalidZone, z.Name, n, MaxPlanVLANs)
	}
	g := &getter{c: c}
	zones, vnets, err := readSDN(ctx, g)
	if err != nil {
		return nil, err
	}
	p := &Plan{Zone: z.SDNZone, Bridge: z.Bridge, MTU: z.MTU, CreateZone: true, Add: []VNet{}, present: map[string]int{}}
	for _, sz := range zones {
		if sz.Zone != z.SDNZone {
			continue
		}
		if sz.Type != "vlan" || sz.Bridge != z.Bridge {
			return nil, errorf("Proxmox SDN zone %s exists as a %s zone on bridge %q, not a VLAN zone on %s: choose another spec.sdn.zone",
				sz.Zone, sz.Type, sz.Bridge, z.Bridge)
		}
		p.CreateZone = false
	}
	for _, pv := range z.planned(vnets) {
		switch v := pv.have; {
		case pv.missing:
			p.Add = append(p.Add, VNet{ID: pv.id, Tag: pv.vid})
		case pv.other:
			return nil, errorf("VNet %s exists in zone %s with tag %d, not in %s with tag %d: rename it, or choose another spec.sdn.vnetPrefix",
				pv.id, v.Zone, v.Tag, z.SDNZone, pv.vid)
		default:
			p.Present++
			p.present[pv.id] = pv.vid
		}
	}
	p.Requests = g.n
	return p, nil
}

// Drift codes of Audit.
const (
	ZoneMissing   = "ZoneMissing"
	VNetMissing   = "VNetMissing"
	VNetOtherTag  = "VNetOtherTag"
	VNetNotOurs   = "VNetNotOurs"
	VNetUnapplied = "VNetUnapplied"
)

// Drift is one difference between the zone and its Proxmox side.
type Drift struct {
	Code string `json:"code"`
	VNet string `json:"vnet,omitempty"`
	// Node names the node of a NodeZone* drift.
	Node    string `json:"node,omitempty"`
	Message string `json:"message"`
	Action  string `json:"action"`
}

// AuditVNets compares the SDN configuration with the zone: a missing SDN
// zone or VNet, a VNet of the zone's with another tag or in another zone, a
// VNet in the SDN zone that no zone VLAN accounts for, and VNets written
// but not applied. When the SDN zone exists it reads its state on every
// node too, and names each node where it is pending or in error (Proxmox
// applies on every node and only logs a node that fails) or that cannot
// be read.
func AuditVNets(ctx context.Context, c pveapi.Client, z Zone) ([]Drift, error) {
	if err := z.Validate(true); err != nil {
		return nil, err
	}
	g := &getter{c: c}
	zones, vnets, err := readSDN(ctx, g)
	if err != nil {
		return nil, err
	}
	var pending []struct {
		VNet  string `json:"vnet"`
		State string `json:"state"`
	}
	if err := g.get(ctx, "/cluster/sdn/vnets?"+url.Values{"pending": {"1"}}.Encode(), &pending); err != nil {
		return nil, errorf("cannot read the pending SDN VNets: %s", errText(err))
	}
	out := []Drift{}
	found := false
	for _, sz := range zones {
		found = found || (sz.Zone == z.SDNZone && sz.Type == "vlan" && sz.Bridge == z.Bridge)
	}
	if !found {
		out = append(out, Drift{Code: ZoneMissing, Message: sprintf("no Proxmox SDN VLAN zone %s on bridge %s", z.SDNZone, z.Bridge),
			Action: "run pxsubstrate sdn apply"})
	}
	out = append(out, vnetDrift(z, vnets)...)
	for _, p := range pending {
		if p.State != "" && z.owns(p.VNet) {
			out = append(out, Drift{Code: VNetUnapplied, VNet: p.VNet, Message: sprintf("VNet %s is %s but not applied", p.VNet, p.State),
				Action: "run pxsubstrate sdn apply (it applies once for all)"})
		}
	}
	if !found {
		return out, nil
	}
	nodes, err := ZoneOnNodes(ctx, c, z.SDNZone)
	if err != nil {
		return nil, err
	}
	return append(out, nodeDrift(z.SDNZone, nodes)...), nil
}

// owns reports whether a VNet ID is one the zone plans.
func (z Zone) owns(id string) bool {
	for _, vid := range z.VLANs.IDs() {
		if z.VNetID(vid) == id {
			return true
		}
	}
	return false
}

func vnetDrift(z Zone, vnets []sdnVNetEntry) []Drift {
	var out []Drift
	for _, pv := range z.planned(vnets) {
		vid, id, v := pv.vid, pv.id, pv.have
		switch {
		case pv.missing:
			out = append(out, Drift{Code: VNetMissing, VNet: id, Message: sprintf("VLAN %d has no VNet %s", vid, id),
				Action: "run pxsubstrate sdn apply"})
		case pv.other:
			out = append(out, Drift{Code: VNetOtherTag, VNet: id,
				Message: sprintf("VNet %s is in zone %s with tag %d, not in %s with tag %d", id, v.Zone, v.Tag, z.SDNZone, vid),
				Action:  sprintf("set tag %d and zone %s on VNet %s in Proxmox (tenant NICs on it reach VLAN %d meanwhile)", vid, z.SDNZone, id, v.Tag)})
		}
	}
	sort.Slice(vnets, func(a, b int) bool { return vnets[a].VNet < vnets[b].VNet })
	for _, v := range vnets {
		if v.Zone == z.SDNZone && !z.owns(v.VNet) {
			out = append(out, Drift{Code: VNetNotOurs, VNet: v.VNet,
				Message: sprintf("VNet %s (tag %d) is in SDN zone %s but no zone VLAN accounts for it", v.VNet, v.Tag, z.SDNZone),
				Action:  sprintf("delete VNet %s, or move it out of zone %s: the zone's tenants are granted VNets by name", v.VNet, z.SDNZone)})
		}
	}
	return out
}

// plannedVNet is one zone VLAN's VNet as the SDN configuration has it:
// missing, other (in another zone or with another tag), or as planned.
type plannedVNet struct {
	vid            int
	id             string
	have           sdnVNetEntry
	missing, other bool
}

// planned pairs every zone VLAN, in order, with the SDN's VNet of its ID:
// the one reading the plan and the audit share.
func (z Zone) planned(vnets []sdnVNetEntry) []plannedVNet {
	byID := vnetsByID(vnets)
	ids := z.VLANs.IDs()
	out := make([]plannedVNet, 0, len(ids))
	for _, vid := range ids {
		id := z.VNetID(vid)
		v, ok := byID[id]
		out = append(out, plannedVNet{vid: vid, id: id, have: v, missing: !ok, other: ok && (v.Zone != z.SDNZone || v.Tag != vid)})
	}
	return out
}

// vnetsByID indexes the SDN's VNets by their ID.
func vnetsByID(vnets []sdnVNetEntry) map[string]sdnVNetEntry {
	return lo.KeyBy(vnets, func(v sdnVNetEntry) string { return v.VNet })
}
