package pvesdn

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

// Finding codes.
const (
	// BridgeMissing: the node has no bridge of that name (or the token
	// cannot see it: bridges are listed only with SDN.Audit on
	// /sdn/zones/localnetwork/<bridge>).
	BridgeMissing = "BridgeMissing"
	// BridgeNotVLANAware: the bridge does not filter VLANs, so it carries
	// no tagged VLAN to the VM NICs.
	BridgeNotVLANAware = "BridgeNotVLANAware"
	// VLANsOutsideBridge: zone VLANs the bridge's bridge-vids do not allow.
	VLANsOutsideBridge = "VLANsOutsideBridge"
	// MTUBelowZone: the bridge's MTU is below the zone's.
	MTUBelowZone = "MTUBelowZone"
	// VLANUsedBySDN: a Proxmox SDN VNet (or QinQ zone) already uses the
	// VLAN on the bridge.
	VLANUsedBySDN = "VLANUsedBySDN"
	// VLANUsedByInterface: a VLAN interface on the bridge (or one of its
	// ports) already takes the VLAN.
	VLANUsedByInterface = "VLANUsedByInterface"
	// NodeUnreadable: the node's network configuration could not be read.
	NodeUnreadable = "NodeUnreadable"
	// ClusterUnreadable: the node list or the SDN configuration could not
	// be read, or the node list holds no node.
	ClusterUnreadable = "ClusterUnreadable"
)

// Finding is one reason zone VLANs cannot be handed out.
type Finding struct {
	Code string `json:"code"`
	// Node is the node it concerns; empty for the whole cluster.
	Node string `json:"node,omitempty"`
	// VLANs are the zone VLANs it takes away, as runs ("101-199,250").
	VLANs   string `json:"vlans,omitempty"`
	Message string `json:"message"`
	Action  string `json:"action"`
}

// NodeView is what Check learned of one node.
type NodeView struct {
	Name string `json:"name"`
	// Read is true when the node's network configuration was read, now or
	// (Stale) in an earlier check.
	Read  bool   `json:"read"`
	Stale bool   `json:"stale,omitempty"`
	Error string `json:"error,omitempty"`
	// Carryable are the zone VLANs this node carries.
	Carryable vlanalloc.Set `json:"-"`
	// CarryableVLANs is Carryable as runs.
	CarryableVLANs string `json:"carryable"`
}

// Report is the result of Check.
type Report struct {
	Zone     string     `json:"zone"`
	Findings []Finding  `json:"findings"`
	Nodes    []NodeView `json:"nodes"`
	// Requests counts the API requests the check made.
	Requests int `json:"requests"`
	// Error is set when the cluster itself could not be read; Nodes is
	// then empty unless WithLastKnown filled it.
	Error string `json:"error,omitempty"`
	zone  vlanalloc.Set
}

// OK reports whether nothing takes a zone VLAN away.
func (r *Report) OK() bool { return len(r.Findings) == 0 }

// CarryableSet returns the zone VLANs every node carries: what may be
// handed out. A node never read carries nothing; a report without nodes
// carries nothing.
func (r *Report) CarryableSet() vlanalloc.Set {
	if len(r.Nodes) == 0 {
		return vlanalloc.Set{}
	}
	out := r.Nodes[0].Carryable
	for _, n := range r.Nodes[1:] {
		out = out.Intersect(&n.Carryable)
	}
	return out
}

// getter counts the requests it makes.
type getter struct {
	c pveapi.Client
	n int
}

func (g *getter) get(ctx context.Context, path string, v any) error {
	g.n++
	return g.c.Get(ctx, path, v)
}

type nodeEntry struct {
	Node string `json:"node"`
}

type sdnZoneEntry struct {
	Zone   string `json:"zone"`
	Type   string `json:"type"`
	Bridge string `json:"bridge"`
	Tag    int    `json:"tag"`
}

type sdnVNetEntry struct {
	VNet string `json:"vnet"`
	Zone string `json:"zone"`
	Tag  int    `json:"tag"`
}

// iface is an interface as GET /nodes/{node}/network returns it.
type iface struct {
	Iface     string `json:"iface"`
	Type      string `json:"type"`
	VLANAware int    `json:"bridge_vlan_aware"`
	VIDs      string `json:"bridge_vids"`
	Ports     string `json:"bridge_ports"`
	MTU       any    `json:"mtu"`
	VLANID    any    `json:"vlan-id"`
	RawDevice string `json:"vlan-raw-device"`
}

// Check reads the node list, the SDN zones and VNets, and each node's
// network configuration once (2 + nodes requests, however many VLANs the
// zone has), and reports what takes zone VLANs away. It needs only audit
// privileges: PVEAuditor on /sdn lets the token see the SDN configuration
// and the bridges. An error is returned for an invalid zone only; a
// cluster that cannot be read gives a report with Error set.
func Check(ctx context.Context, c pveapi.Client, z Zone) (*Report, error) {
	if err := z.Validate(false); err != nil {
		return nil, err
	}
	g := &getter{c: c}
	r := &Report{Zone: z.Name, Findings: []Finding{}, Nodes: []NodeView{}, zone: z.VLANs}
	var nodes []nodeEntry
	var zones []sdnZoneEntry
	var vnets []sdnVNetEntry
	for _, read := range []struct {
		path string
		v    any
	}{{"/nodes", &nodes}, {"/cluster/sdn/zones", &zones}, {"/cluster/sdn/vnets", &vnets}} {
		if err := g.get(ctx, read.path, read.v); err != nil {
			r.Requests = g.n
			r.Error = sprintf("GET %s: %s", read.path, errText(err))
			r.Findings = append(r.Findings, Finding{Code: ClusterUnreadable, Message: r.Error,
				Action: "make the API reachable and give the token PVEAuditor on /sdn; the last known view is kept"})
			return r, nil
		}
	}
	if len(nodes) == 0 {
		r.Requests = g.n
		r.Error = errNoNodes.Error()
		r.Findings = append(r.Findings, Finding{Code: ClusterUnreadable, Message: r.Error,
			Action: "give the token PVEAuditor on /nodes and /sdn, and check that --url is a Proxmox VE node"})
		return r, nil
	}
	sdnUse := sdnConflicts(z, zones, vnets)
	sort.Slice(nodes, func(a, b int) bool { return nodes[a].Node < nodes[b].Node })
	for _, n := range nodes {
		var ifaces []iface
		err := g.get(ctx, pveapi.Path("nodes", n.Node, "network"), &ifaces)
		if err != nil {
			msg := errText(err)
			r.Nodes = append(r.Nodes, NodeView{Name: n.Node, Error: msg})
			r.Findings = append(r.Findings, Finding{Code: NodeUnreadable, Node: n.Node, VLANs: z.VLANs.String(),
				Message: sprintf("the network configuration of node %s cannot be read: %s", n.Node, msg),
				Action:  "bring the node back; until it is read once no VLAN is handed out, afterwards its last view is kept"})
			continue
		}
		view, found := checkNode(z, n.Node, ifaces)
		for _, f := range sdnUse {
			view.Carryable = view.Carryable.Subtract(&f.set)
		}
		view.CarryableVLANs = view.Carryable.String()
		r.Nodes = append(r.Nodes, view)
		r.Findings = append(r.Findings, found...)
	}
	for _, f := range sdnUse {
		r.Findings = append(r.Findings, f.Finding)
	}
	r.Requests = g.n
	return r, nil
}

type setFinding struct {
	Finding
	set vlanalloc.Set
}

// sdnConflicts lists zone VLANs used on the bridge by SDN VNets of VLAN
// zones (other than the zone's own SDN zone) and by QinQ zones' service
// tags.
func sdnConflicts(z Zone, zones []sdnZoneEntry, vnets []sdnVNetEntry) []setFinding {
	onBridge := map[string]sdnZoneEntry{}
	var out []setFinding
	for _, sz := range zones {
		if sz.Bridge != z.Bridge {
			continue
		}
		onBridge[sz.Zone] = sz
		if sz.Type == "qinq" && z.VLANs.Has(sz.Tag) {
			var s vlanalloc.Set
			s.Add(sz.Tag)
			out = append(out, setFinding{set: s, Finding: Finding{Code: VLANUsedBySDN, VLANs: s.String(),
				Message: sprintf("VLAN %d is the service tag of Proxmox SDN QinQ zone %s on bridge %s", sz.Tag, sz.Zone, z.Bridge),
				Action:  sprintf("reserve VLAN %d in the zone, or move QinQ zone %s to another tag", sz.Tag, sz.Zone)}})
		}
	}
	sort.Slice(vnets, func(a, b int) bool { return vnets[a].VNet < vnets[b].VNet })
	for _, v := range vnets {
		sz, ok := onBridge[v.Zone]
		if !ok || sz.Type != "vlan" || !z.VLANs.Has(v.Tag) || (z.SDNZone != "" && v.Zone == z.SDNZone) {
			continue
		}
		var s vlanalloc.Set
		s.Add(v.Tag)
		out = append(out, setFinding{set: s, Finding: Finding{Code: VLANUsedBySDN, VLANs: s.String(),
			Message: sprintf("VLAN %d is used by Proxmox SDN VNet %s of VLAN zone %s on bridge %s", v.Tag, v.VNet, v.Zone, z.Bridge),
			Action:  sprintf("reserve VLAN %d in the zone, or give VNet %s another tag", v.Tag, v.VNet)}})
	}
	return out
}

// checkNode checks one node's interfaces.
func checkNode(z Zone, node string, ifaces []iface) (NodeView, []Finding) {
	view := NodeView{Name: node, Read: true}
	byName := map[string]iface{}
	for _, i := range ifaces {
		byName[i.Iface] = i
	}
	br, ok := byName[z.Bridge]
	all := z.VLANs.String()
	switch {
	case !ok || (br.Type != "bridge" && br.Type != "OVSBridge"):
		return view, []Finding{{Code: BridgeMissing, Node: node, VLANs: all,
			Message: sprintf("node %s has no bridge %s (or the token cannot see it)", node, z.Bridge),
			Action:  sprintf("create VLAN-aware bridge %s on node %s, and give the token SDN.Audit on /sdn/zones/localnetwork", z.Bridge, node)}}
	case br.Type == "bridge" && br.VLANAware != 1:
		return view, []Finding{{Code: BridgeNotVLANAware, Node: node, VLANs: all,
			Message: sprintf("bridge %s on node %s is not VLAN-aware", z.Bridge, node),
			// The VLAN list is the zone's, whole: it is the fix.
			Action: fmt.Sprintf("set bridge-vlan-aware yes and bridge-vids %s on %s of node %s", all, termsafe.Cut(z.Bridge), termsafe.Cut(node))}}
	}
	if mtu := intOf(br.MTU, 1500); z.MTU > mtu {
		return view, []Finding{{Code: MTUBelowZone, Node: node, VLANs: all,
			Message: sprintf("bridge %s on node %s has MTU %d, below the zone's %d", z.Bridge, node, mtu, z.MTU),
			Action:  sprintf("set mtu %d (or more) on %s and its ports on node %s", z.MTU, z.Bridge, node)}}
	}
	view.Carryable = z.VLANs
	var found []Finding
	if br.Type == "bridge" {
		outside := outsideVIDs(z.VLANs, br.VIDs)
		if outside.Len() > 0 {
			found = append(found, Finding{Code: VLANsOutsideBridge, Node: node, VLANs: outside.String(),
				Message: sprintf("bridge %s on node %s does not allow VLANs %s (bridge-vids %q)", z.Bridge, node, outside.String(), br.VIDs),
				Action:  sprintf("add %s to bridge-vids of %s on node %s", outside.String(), z.Bridge, node)})
			view.Carryable = view.Carryable.Subtract(&outside)
		}
	}
	for _, f := range vlanInterfaces(z, node, br, ifaces) {
		found = append(found, f.Finding)
		view.Carryable = view.Carryable.Subtract(&f.set)
	}
	return view, found
}

// outsideVIDs returns the zone VLANs bridge-vids does not allow; a
// VLAN-aware bridge without bridge-vids allows none (ifupdown2 leaves its
// ports on VLAN 1 only).
func outsideVIDs(zone vlanalloc.Set, vids string) vlanalloc.Set {
	allowed, _ := parseVIDs(vids)
	return zone.Subtract(&allowed)
}

// parseVIDs parses bridge-vids ("2-4094", "100 200-300"); items that do not
// parse allow nothing and are returned.
func parseVIDs(v string) (vlanalloc.Set, []string) {
	var s vlanalloc.Set
	var bad []string
	for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' || r == ';' || r == '\t' }) {
		first, last, err := vlanalloc.ParseRange(item)
		if err != nil {
			bad = append(bad, item)
			continue
		}
		for vid := first; vid <= last; vid++ {
			s.Add(vid)
		}
	}
	return s, bad
}

// vlanInterfaces finds VLAN interfaces on the bridge or its ports that take
// zone VLANs.
func vlanInterfaces(z Zone, node string, br iface, ifaces []iface) []setFinding {
	parents := map[string]bool{z.Bridge: true}
	for _, p := range strings.Fields(br.Ports) {
		parents[p] = true
	}
	var out []setFinding
	for _, i := range ifaces {
		dev, vid := i.RawDevice, intOf(i.VLANID, 0)
		if base, tag, ok := strings.Cut(i.Iface, "."); ok {
			if n, err := strconv.Atoi(tag); err == nil {
				dev, vid = base, n
			}
		}
		if dev == "" || !parents[dev] || !z.VLANs.Has(vid) {
			continue
		}
		var s vlanalloc.Set
		s.Add(vid)
		out = append(out, setFinding{set: s, Finding: Finding{Code: VLANUsedByInterface, Node: node, VLANs: s.String(),
			Message: sprintf("VLAN interface %s on node %s takes VLAN %d from %s", i.Iface, node, vid, dev),
			Action:  sprintf("remove %s from node %s, or reserve VLAN %d in the zone", i.Iface, node, vid)}})
	}
	return out
}

// intOf reads a number PVE sends as a string or a number.
func intOf(v any, def int) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(x)); err == nil {
			return n
		}
	}
	return def
}
