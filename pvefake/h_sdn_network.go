package pvefake

import (
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// ifaceNameRe is pve-iface.
var ifaceNameRe = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]{1,20}([:.]\d+)?$`)

// networkTypes is pve-manager's $network_type_enum (PVE/API2/Network.pm).
var networkTypes = []string{"bridge", "bond", "eth", "alias", "vlan", "fabric", "OVSBridge", "OVSBond", "OVSPort", "OVSIntPort", "vnet"}

func nodeNetworkRoutes() []*route {
	node := param{name: "node", format: fmtNode}
	zero := 0
	return []*route{
		{method: "GET", path: "/nodes/{node}/network", handle: listNetwork,
			schema: []param{node, {name: "type", optional: true, enum: append(append([]string{}, networkTypes...), "any_bridge", "any_local_bridge", "include_sdn")}}},
		{method: "GET", path: "/nodes/{node}/tasks", handle: listNodeTasks, schema: []param{node,
			{name: "start", typ: tInt, optional: true, min: &zero}, {name: "limit", typ: tInt, optional: true, min: &zero},
			opt("userfilter", tString), opt("typefilter", tString), {name: "vmid", optional: true, format: fmtVMID},
			opt("errors", tBool), {name: "source", optional: true, enum: []string{"archive", "active", "all"}},
			opt("since", tInt), opt("until", tInt), {name: "statusfilter", optional: true, format: fmtStatusList}}},
	}
}

func fmtStatusList(v string) error {
	for _, s := range strings.Split(v, ",") {
		if !containsStr([]string{"ok", "warning", "error", "unknown"}, strings.TrimSpace(s)) {
			return errString("value '" + s + "' is not a task status type (ok, warning, error, unknown)")
		}
	}
	return nil
}

// ifaceEntry is an interface as read_etc_network_interfaces parses it:
// values from the file are strings, flags are 1.
func ifaceEntry(i Interface, priority int) map[string]any {
	e := map[string]any{"iface": i.Name, "type": i.Type, "method": "manual", "method6": "manual",
		"families": []string{"inet"}, "autostart": 1, "priority": priority}
	if !i.Inactive {
		e["active"] = 1
	}
	if i.CIDR != "" {
		e["method"], e["cidr"] = "static", i.CIDR
		addr, bits, _ := strings.Cut(i.CIDR, "/")
		e["address"], e["netmask"] = addr, bits
	}
	if i.Type == "bridge" {
		e["bridge_stp"], e["bridge_fd"] = "off", "0"
		e["bridge_ports"] = i.Ports
		if i.VLANAware {
			e["bridge_vlan_aware"] = 1
		}
		if i.VIDs != "" {
			e["bridge_vids"] = i.VIDs
		}
	}
	if i.MTU != 0 {
		e["mtu"] = strconv.Itoa(i.MTU)
	}
	if i.VLANID != 0 {
		e["vlan-id"] = strconv.Itoa(i.VLANID)
	}
	if i.RawDevice != "" {
		e["vlan-raw-device"] = i.RawDevice
	}
	return e
}

// listNetwork is pve-manager's GET /nodes/{node}/network: the node's
// interfaces (not lo), filtered by type; with any_bridge, include_sdn or
// vnet the running configuration's VNets the caller may see; bridges and
// VNets shown only to callers with SDN.Audit or SDN.Use on them
// (check_sdn_bridge) unless the caller is root@pam.
func listNetwork(c *call) (any, *apiError) {
	if err := c.nodeExists(c.node); err != nil {
		return nil, err
	}
	filter := c.p["type"]
	out := []map[string]any{}
	names := sortedKeys(c.s.nodeIfaces(c.node))
	for prio, name := range names {
		i := c.s.nodeIfaces(c.node)[name]
		bridge := i.Type == "bridge" || i.Type == "OVSBridge"
		if filter != "" && filter != "include_sdn" && filter != i.Type &&
			(!bridge || (filter != "any_bridge" && filter != "any_local_bridge")) {
			continue
		}
		if bridge && !c.isRoot() && !c.checkSDNBridge("localnetwork", name) {
			continue
		}
		out = append(out, ifaceEntry(i, prio+3))
	}
	if filter == "any_bridge" || filter == "include_sdn" || filter == "vnet" {
		out = append(out, c.localVNets()...)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a]["iface"].(string) < out[b]["iface"].(string) })
	return out, nil
}

// checkSDNBridge is RPCEnvironment::check_sdn_bridge with SDN.Audit or
// SDN.Use: on the bridge, or on one of its VLANs that has an ACL entry.
func (c *call) checkSDNBridge(zone, bridge string) bool {
	privs := []string{"SDN.Audit", "SDN.Use"}
	path := "/sdn/zones/" + zone + "/" + bridge
	if ok, _ := c.checkAny(path, privs, true); ok {
		return true
	}
	for k := range c.s.cfg.ACL {
		if vlan, ok := strings.CutPrefix(k.Path, path+"/"); ok && !strings.Contains(vlan, "/") {
			if ok, _ := c.checkAny(k.Path, privs, true); ok {
				return true
			}
		}
	}
	return false
}

// localVNets is PVE::Network::SDN::get_local_vnets: the running
// configuration's VNets on this node that the caller may see.
func (c *call) localVNets() []map[string]any {
	run := c.s.sdn().runningOrEmpty()
	var out []map[string]any
	for _, id := range vnetsOf(run) {
		v := run.vnets[id]
		zone := v["zone"]
		if zone == "" || (!c.isRoot() && !c.checkSDNBridge(zone, id)) {
			continue
		}
		z := run.zones[zone]
		if nodes := z["nodes"]; nodes != "" && !containsStr(splitNodes(nodes), c.node) {
			continue
		}
		out = append(out, map[string]any{"iface": id, "type": "vnet", "active": "1", "ipam": b2i(z["ipam"] != ""),
			"vlanaware": b2i(v["vlanaware"] == "1"), "comments": v["alias"]})
	}
	return out
}

// taskStatusType is upid_normalize_status_type.
func taskStatusType(exit string) string {
	switch {
	case exit == "":
		return "unknown"
	case exit == "OK":
		return "ok"
	case strings.HasPrefix(exit, "WARNINGS: "):
		return "warning"
	}
	return "error"
}

// listNodeTasks is Tasks.pm's node_tasks: the caller's own tasks (and its
// tokens'), or every task with Sys.Audit on the node, newest first.
func listNodeTasks(c *call) (any, *apiError) {
	if err := c.nodeExists(c.node); err != nil {
		return nil, err
	}
	auditor, _ := c.checkAll("/nodes/"+c.node, []string{"Sys.Audit"}, true)
	var tasks []*task
	for _, t := range c.s.tasks {
		if t.node == c.node {
			tasks = append(tasks, t)
		}
	}
	sort.Slice(tasks, func(a, b int) bool {
		if !tasks[a].start.Equal(tasks[b].start) {
			return tasks[a].start.After(tasks[b].start)
		}
		return tasks[a].pid > tasks[b].pid
	})
	statuses := c.statusFilter()
	source := c.p["source"]
	limit, count := 50, 0
	if c.p.has("limit") {
		limit = c.p.int("limit")
	}
	out := []map[string]any{}
	now := c.s.now()
	for _, t := range tasks {
		running := t.running(now)
		if (source == "" || source == "archive") && running || source == "active" && !running {
			continue
		}
		if !c.taskVisible(t, auditor) {
			continue
		}
		exit := t.exit
		if running {
			exit = ""
		}
		if !statuses[taskStatusType(exit)] || !c.taskInTime(t) {
			continue
		}
		if count++; count <= c.p.int("start") || limit <= 0 {
			continue
		}
		limit--
		out = append(out, c.taskEntry(t, running))
	}
	return out, nil
}

// statusFilter is node_tasks' status filter: every status, the listed
// ones, or (errors=1) all but ok.
func (c *call) statusFilter() map[string]bool {
	statuses := map[string]bool{"ok": true, "warning": true, "error": true, "unknown": true}
	if v := c.p["statusfilter"]; v != "" && !c.p.flag("errors", false) {
		statuses = map[string]bool{}
		for _, s := range strings.Split(v, ",") {
			statuses[strings.ToLower(strings.TrimSpace(s))] = true
		}
	} else if c.p.flag("errors", false) {
		statuses["ok"] = false
	}
	return statuses
}

func (c *call) taskInTime(t *task) bool {
	start := t.start.Unix()
	return (!c.p.has("since") || start >= int64(c.p.int("since"))) && (!c.p.has("until") || start <= int64(c.p.int("until")))
}

func (c *call) taskVisible(t *task, auditor bool) bool {
	if f := c.p["userfilter"]; f != "" && !strings.Contains(strings.ToLower(t.user), strings.ToLower(f)) {
		return false
	}
	owner, _, _ := pveacl.ParseTokenID(t.user)
	if !auditor && t.user != c.auth && owner != c.auth {
		return false
	}
	if f := c.p["typefilter"]; f != "" && t.typ != f {
		return false
	}
	if v := c.p["vmid"]; v != "" && t.id != v {
		return false
	}
	return true
}

func (c *call) taskEntry(t *task, running bool) map[string]any {
	e := map[string]any{"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart, "starttime": t.start.Unix(),
		"type": t.typ, "id": t.id, "user": t.user}
	if running {
		e["status"] = "RUNNING"
	} else {
		e["status"], e["endtime"] = t.exit, t.end.Unix()
	}
	return e
}
