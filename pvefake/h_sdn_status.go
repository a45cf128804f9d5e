package pvefake

import (
	"regexp"
	"strconv"
	"strings"
)

// The per-node SDN status follows pve-network commit ecf98c5d8f12
// (src/PVE/API2/Network/SDN/Nodes/{Status,Zones,Zone}.pm,
// src/PVE/Network/SDN/Zones.pm status and ifquery_check,
// src/PVE/Network/SDN/Zones/{Plugin,VlanPlugin}.pm status and
// generate_status_message).

func nodeSDNRoutes() []*route {
	node := param{name: "node", format: fmtNode}
	return []*route{
		{method: "GET", path: "/nodes/{node}/sdn", schema: []param{node}, handle: nodeSDNIndex},
		// Nodes/Zones.pm documents "Only list entries where you have
		// 'SDN.Audit'" but its code lists every zone to every user.
		{method: "GET", path: "/nodes/{node}/sdn/zones", schema: []param{node}, handle: nodeSDNZones},
		{method: "GET", path: "/nodes/{node}/sdn/zones/{zone}/content", schema: []param{node, sdnID("zone")},
			check: perm{path: "/sdn/zones/{zone}", privs: []string{"SDN.Audit"}}, handle: nodeSDNZoneContent},
	}
}

func nodeSDNIndex(c *call) (any, *apiError) {
	if err := c.nodeExists(c.node); err != nil {
		return nil, err
	}
	return []map[string]string{{"name": "fabrics"}, {"name": "vnets"}, {"name": "zones"}}, nil
}

// nodeSDNZones is GET /nodes/{node}/sdn/zones: each zone of the running
// configuration on the node with its status (available, pending, error);
// nothing before the first apply.
func nodeSDNZones(c *call) (any, *apiError) {
	if err := c.nodeExists(c.node); err != nil {
		return nil, err
	}
	zones, _ := c.s.sdnNodeStatus(c.node)
	out := []map[string]string{}
	for _, id := range sortedKeys(zones) {
		out = append(out, map[string]string{"zone": id, "status": zones[id].status})
	}
	return out, nil
}

// nodeSDNZoneContent is GET /nodes/{node}/sdn/zones/{zone}/content: the
// zone's VNets on the node with their status and statusmsg.
func nodeSDNZoneContent(c *call) (any, *apiError) {
	if err := c.nodeExists(c.node); err != nil {
		return nil, err
	}
	_, vnets := c.s.sdnNodeStatus(c.node)
	out := []map[string]string{}
	for _, id := range sortedKeys(vnets) {
		v := vnets[id]
		if v.zone != c.p["zone"] {
			continue
		}
		e := map[string]string{"vnet": id, "status": v.status}
		if v.msg != "" {
			e["statusmsg"] = v.msg
		}
		out = append(out, e)
	}
	return out, nil
}

// sdnStatus is one zone's or VNet's status on a node.
type sdnStatus struct {
	zone   string
	status string
	msg    string
}

var sdnVersionRe = regexp.MustCompile(`^#version:(\d+)$`)

// localSDNVersion is read_etc_network_config_version: the version on the
// first line of the node's /etc/network/interfaces.d/sdn (0: none).
func (n *sdnState) localSDNVersion(node string) int {
	first, _, _ := strings.Cut(n.nodeFiles[node], "\n")
	m := sdnVersionRe.FindStringSubmatch(first)
	if m == nil {
		return 0
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

// sdnNodeStatus is Zones::status on a node: every zone and VNet of the
// running configuration placed on it is pending while the node's
// generated file is older than the running version (or missing), else
// available, and a VNet whose interfaces ifquery does not find up as
// configured is in error, and so is its zone.
func (s *state) sdnNodeStatus(node string) (map[string]sdnStatus, map[string]sdnStatus) {
	n := s.sdn()
	if n.running == nil || n.version == 0 {
		return nil, nil
	}
	errConfig := ""
	switch local := n.localSDNVersion(node); {
	case local == 0:
		errConfig = "local sdn network configuration is not yet generated, please reload"
	case local < n.version:
		errConfig = "local sdn network configuration is too old, please reload"
	}
	run := *n.running
	onNode := func(z sdnSection) bool { return z["nodes"] == "" || containsStr(splitNodes(z["nodes"]), node) }
	zones, vnets := map[string]sdnStatus{}, map[string]sdnStatus{}
	for id, z := range run.zones {
		if onNode(z) {
			zones[id] = sdnStatus{zone: id, status: statusOr(errConfig, "pending", "available")}
		}
	}
	ifq := s.ifqueryCheck(node)
	for _, id := range vnetsOf(run) {
		v := run.vnets[id]
		zone := v["zone"]
		z, ok := run.zones[zone]
		switch {
		case zone == "":
		case !ok:
			vnets[id] = sdnStatus{status: "error", msg: "unknown zone '" + zone + "' configured"}
		case !onNode(z):
		case errConfig != "":
			vnets[id] = sdnStatus{zone: zone, status: "pending", msg: errConfig}
		default:
			vnets[id] = sdnStatus{zone: zone, status: "available"}
			if errs := s.vnetStatus(node, z, v, id, ifq); len(errs) > 0 {
				vnets[id] = sdnStatus{zone: zone, status: "error", msg: strings.Join(errs, ",")}
				zones[zone] = sdnStatus{zone: zone, status: "error"}
			}
		}
	}
	return zones, vnets
}

func statusOr(errConfig, ifErr, otherwise string) string {
	if errConfig != "" {
		return ifErr
	}
	return otherwise
}

// vnetStatus is the zone plugin's status: VlanPlugin's for a VLAN zone
// (the bridge must exist; the VNet, the bridge and, on a bridge that is
// not VLAN-aware, <bridge>v<tag> and the veth pair must be up as
// configured), the base Plugin's (the VNet itself) for the other types,
// whose extra interfaces the fake does not generate.
func (s *state) vnetStatus(node string, z, v sdnSection, id string, ifq map[string]string) []string {
	ifaces := []string{}
	if z["type"] == "vlan" {
		br, ok := s.nodeIfaces(node)[z["bridge"]]
		if !ok || br.Inactive {
			return []string{"missing " + z["bridge"]}
		}
		ifaces = append(ifaces, id, z["bridge"])
		switch {
		case br.Type == "OVSBridge":
			ifaces = append(ifaces, "ln_"+id)
		case !br.VLANAware:
			ifaces = append(ifaces, z["bridge"]+"v"+v["tag"], "ln_"+id, "pr_"+id)
		}
	}
	if ifq[id] == "" {
		return []string{"vnet is not generated. Please check the 'reload network' task log."}
	}
	var errs []string
	for _, i := range ifaces {
		switch ifq[i] {
		case "":
			errs = append(errs, "missing "+i)
		case "pass":
		default:
			errs = append(errs, "error "+i)
		}
	}
	return errs
}

// ifqueryCheck is `ifquery -a -c`: every configured interface, "pass"
// when it is up as configured. The node's own interfaces are up as
// SetInterface gave them (an inactive one fails); a stanza of the
// generated SDN file passes when the node's last successful reload
// brought up the same stanza, so a failed ifreload leaves the new
// VNets failing.
func (s *state) ifqueryCheck(node string) map[string]string {
	n := s.sdn()
	out := map[string]string{}
	for name, i := range s.nodeIfaces(node) {
		out[name] = "pass"
		if i.Inactive {
			out[name] = "fail"
		}
	}
	live := parseStanzas(n.nodeLive[node])
	for name, lines := range parseStanzas(n.nodeFiles[node]) {
		if got, ok := live[name]; ok && got == lines {
			out[name] = "pass"
		} else {
			out[name] = "fail"
		}
	}
	return out
}

// parseStanzas reads a generated interfaces file back: each "iface NAME"
// with its indented lines.
func parseStanzas(file string) map[string]string {
	out := map[string]string{}
	name := ""
	for _, l := range strings.Split(file, "\n") {
		switch {
		case strings.HasPrefix(l, "iface "):
			name = strings.TrimPrefix(l, "iface ")
			out[name] = ""
		case strings.HasPrefix(l, "\t") && name != "":
			out[name] += l + "\n"
		default:
			name = ""
		}
	}
	return out
}

// networkResourcesSince is the pve-manager release whose pvestatd
// broadcasts each node's zones as "network" resources (commit 1804cdf1,
// first in 9.0.12); /cluster/resources?type=sdn then skips those nodes.
var networkResourcesSince = [3]int{9, 0, 12}

// sdnResources is the SDN part of GET /cluster/resources (pve-manager
// PVE/API2/Cluster.pm at 14a22df35955): each node's zone statuses as
// pvestatd's update_sdn_status and update_network_status broadcast them,
// to callers with SDN.Audit on the zone. Before 9.0.12 they are "sdn"
// entries; from it they are "network" entries (listed only without a type
// filter, with the localnetwork zone of every node), and type=sdn lists
// none. The fake computes them at the request; PVE serves each node's last
// broadcast (every 10 s, and a node that is down keeps its last one).
func (c *call) sdnResources(typ string) []map[string]any {
	full, _ := c.srv.cfg.releaseOf()
	network := !releaseBefore(full, networkResourcesSince)
	out := []map[string]any{}
	if network && typ == "" && c.checkAllOK("/sdn/zones/localnetwork", "SDN.Audit") {
		for _, node := range sortedKeys(c.s.nodes) {
			out = append(out, map[string]any{"id": "network/" + node + "/zone/localnetwork", "type": "network",
				"network-type": "zone", "network": "localnetwork", "node": node, "status": "ok"})
		}
	}
	if network && typ == "sdn" {
		return out
	}
	run := c.s.sdn().runningOrEmpty()
	for _, node := range sortedKeys(c.s.nodes) {
		zones, _ := c.s.sdnNodeStatus(node)
		for _, id := range sortedKeys(zones) {
			if !c.checkAllOK("/sdn/zones/"+id, "SDN.Audit") {
				continue
			}
			e := map[string]any{"id": "sdn/" + node + "/" + id, "sdn": id, "node": node, "type": "sdn", "status": zones[id].status,
				"zone-type": run.zones[id]["type"]}
			if network {
				e = map[string]any{"id": "network/" + node + "/zone/" + id, "type": "network", "network-type": "zone", "network": id,
					"node": node, "status": zones[id].status, "zone-type": run.zones[id]["type"]}
			}
			out = append(out, e)
		}
	}
	return out
}

func (c *call) checkAllOK(path string, privs ...string) bool {
	ok, _ := c.checkAll(path, privs, true)
	return ok
}

// releaseBefore compares a MAJOR.MINOR.PATCH release with v.
func releaseBefore(release string, v [3]int) bool {
	parts := strings.SplitN(release, ".", 3)
	for i := range 3 {
		n := 0
		if i < len(parts) {
			n, _ = strconv.Atoi(parts[i])
		}
		if n != v[i] {
			return n < v[i]
		}
	}
	return false
}
