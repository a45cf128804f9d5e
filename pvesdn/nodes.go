package pvesdn

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/samber/lo"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

// Per-node states of an SDN zone, as GET /nodes/{node}/sdn/zones reports
// them: available once the node has generated and brought up the running
// configuration; pending while its generated configuration is older than
// the running one (its reload never ran); error when a VNet's interfaces
// are not up as generated (its reload failed).
const (
	ZoneAvailable = "available"
	ZonePending   = "pending"
	ZoneError     = "error"
)

// NodeZone is an SDN zone's state on one node.
type NodeZone struct {
	Node string `json:"node"`
	// Status is the node's status of the zone; "" when the node does not
	// list it (before the first apply, or a zone restricted to other nodes).
	Status string `json:"status,omitempty"`
	// VNets holds the statusmsg of each of the zone's VNets that is not
	// available on the node.
	VNets map[string]string `json:"vnets,omitempty"`
	// Err is why the node could not be read.
	Err string `json:"error,omitempty"`
}

// NotAvailable reports whether the node lists the zone as pending or in
// error.
func (n NodeZone) NotAvailable() bool { return n.Status != "" && n.Status != ZoneAvailable }

// detail is the node's VNet messages, "pxa0100: error pxa0100; ...".
func (n NodeZone) detail() string {
	ids := slices.Sorted(maps.Keys(n.VNets))
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		parts = append(parts, id+": "+n.VNets[id])
	}
	return strings.Join(parts, "; ")
}

// ZoneOnNodes reads SDN zone zone's state on every node: the node list,
// each node's GET /nodes/{node}/sdn/zones, and, for a node where the zone
// is not available, its VNets' status messages. A node that cannot be read
// is returned with Err; only a node list that cannot be read is an error.
func ZoneOnNodes(ctx context.Context, c pveapi.Client, zone string) ([]NodeZone, error) {
	nodes, err := listNodes(ctx, c)
	if err != nil {
		return nil, err
	}
	out := make([]NodeZone, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, zoneOnNode(ctx, c, n, zone))
	}
	return out, nil
}

// errNoNodes is a node list without a node: every Proxmox VE cluster has
// at least the node that answers, so nothing was read.
var errNoNodes = errors.New("GET /nodes listed no node: the token sees none (give it Sys.Audit on /nodes), or the server is not a Proxmox VE API")

// listNodes returns the cluster's node names in order (GET /nodes); a list
// without a node is errNoNodes.
func listNodes(ctx context.Context, c pveapi.Client) ([]string, error) {
	var nodes []nodeEntry
	if err := c.Get(ctx, "/nodes", &nodes); err != nil {
		return nil, errorf("cannot list the nodes: %s", errText(err))
	}
	if len(nodes) == 0 {
		return nil, errNoNodes
	}
	names := lo.Map(nodes, func(n nodeEntry, _ int) string { return n.Node })
	slices.Sort(names)
	return names, nil
}

// nodeZoneEntry is an item of GET /nodes/{node}/sdn/zones.
type nodeZoneEntry struct {
	Zone   string `json:"zone"`
	Status string `json:"status"`
}

// zoneContentEntry is an item of GET /nodes/{node}/sdn/zones/{zone}/content.
type zoneContentEntry struct {
	VNet      string `json:"vnet"`
	Status    string `json:"status"`
	StatusMsg string `json:"statusmsg"`
}

func zoneOnNode(ctx context.Context, c pveapi.Client, node, zone string) NodeZone {
	nz := NodeZone{Node: node}
	path := pveapi.Path("nodes", node, "sdn", "zones")
	var zones []nodeZoneEntry
	if err := c.Get(ctx, path, &zones); err != nil {
		nz.Err = errText(err)
		return nz
	}
	for _, z := range zones {
		if z.Zone == zone {
			nz.Status = z.Status
		}
	}
	if !nz.NotAvailable() {
		return nz
	}
	var content []zoneContentEntry
	if err := c.Get(ctx, pveapi.Path("nodes", node, "sdn", "zones", zone, "content"), &content); err != nil {
		nz.Err = errText(err)
		return nz
	}
	nz.VNets = map[string]string{}
	for _, v := range content {
		if v.Status != ZoneAvailable {
			nz.VNets[v.VNet] = v.StatusMsg
		}
	}
	return nz
}

// Drift codes of a node whose zone is not as applied.
const (
	// NodeZonePending: the node has not generated the running
	// configuration (it missed the apply's reload).
	NodeZonePending = "NodeZonePending"
	// NodeZoneError: the node's reload did not bring the VNets up.
	NodeZoneError = "NodeZoneError"
	// NodeZoneUnreadable: the node's SDN state could not be read.
	NodeZoneUnreadable = "NodeZoneUnreadable"
)

// nodeDrift names each node where the zone is not available, and each
// node that could not be read.
func nodeDrift(zone string, nodes []NodeZone) []Drift {
	var out []Drift
	for _, n := range nodes {
		switch {
		case n.Err != "":
			out = append(out, Drift{Code: NodeZoneUnreadable, Node: n.Node,
				Message: sprintf("the SDN state of node %s could not be read: %s", n.Node, n.Err),
				Action:  sprintf("bring node %s back, then run pxsubstrate sdn audit again", n.Node)})
		case n.Status == ZonePending:
			out = append(out, Drift{Code: NodeZonePending, Node: n.Node,
				Message: sprintf("SDN zone %s is pending on node %s: %s", zone, n.Node, n.detail()),
				Action:  "run pxsubstrate sdn apply: it reloads every node"})
		case n.NotAvailable():
			out = append(out, Drift{Code: NodeZoneError, Node: n.Node,
				Message: sprintf("SDN zone %s is in %s on node %s: %s", zone, n.Status, n.Node, n.detail()),
				Action:  sprintf("fix what node %s's last srvreload task logged, then run pxsubstrate sdn apply (it reloads every node)", n.Node)})
		}
	}
	return out
}
