package pvefake

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// WithRelease sets the release GET /version reports ("9.2.1"; default
// 9.1.1 on PVE 9, 8.4.1 on PVE 8). Its major version must be WithVersion's.
// What came with a minor release follows it: the SDN dry-run needs 9.2.
func WithRelease(release string) Option { return func(c *config) { c.release = release } }

// releaseOf returns the full version and the major.minor release.
func (c config) releaseOf() (string, string) {
	if c.release == "" {
		v := versions[c.version]
		return v[0], v[1]
	}
	parts := strings.SplitN(c.release, ".", 3)
	return c.release, parts[0] + "." + parts[1]
}

// checkRelease validates WithRelease.
func (c config) checkRelease() error {
	if c.release == "" {
		return nil
	}
	parts := strings.Split(c.release, ".")
	if len(parts) != 3 {
		return fmt.Errorf("release %q is not MAJOR.MINOR.PATCH", c.release)
	}
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return fmt.Errorf("release %q is not MAJOR.MINOR.PATCH", c.release)
		}
	}
	if parts[0] != strconv.Itoa(int(c.version)) {
		return fmt.Errorf("release %q is not a release of PVE %d (set WithVersion)", c.release, c.version)
	}
	return nil
}

// atLeast reports whether the server's release is major.minor or later.
func (c config) atLeast(major, minor int) bool {
	_, rel := c.releaseOf()
	maj, min, _ := strings.Cut(rel, ".")
	a, _ := strconv.Atoi(maj)
	b, _ := strconv.Atoi(min)
	return a > major || (a == major && b >= minor)
}

func sdnRoutes(c config) []*route {
	allocate := perm{path: "/sdn", privs: []string{"SDN.Allocate"}}
	rs := []*route{
		{method: "GET", path: "/cluster/sdn", check: perm{path: "/sdn", privs: []string{"SDN.Audit"}}, handle: sdnIndex},
		{method: "PUT", path: "/cluster/sdn", schema: lockParams(c, true), check: allocate, handle: applySDN},
	}
	if c.version >= pveacl.PVE9 {
		rs = append(rs,
			&route{method: "POST", path: "/cluster/sdn/lock", schema: []param{opt("allow-pending", tBool)}, check: allocate, handle: lockSDN},
			&route{method: "DELETE", path: "/cluster/sdn/lock", schema: []param{opt("lock-token", tString), opt("force", tBool)},
				check: allocate, handle: releaseSDNLock},
			&route{method: "POST", path: "/cluster/sdn/rollback", schema: lockParams(c, true), check: allocate, handle: rollbackSDN})
	}
	if c.atLeast(9, 2) {
		rs = append(rs, &route{method: "GET", path: "/cluster/sdn/dry-run", schema: []param{{name: "node", format: fmtNode}},
			check: perm{path: "/nodes/{node}", privs: []string{"Sys.Audit"}}, handle: dryRunSDN})
	}
	return append(rs, sdnConfigRoutes(c)...)
}

func sdnIndex(*call) (any, *apiError) {
	out := []map[string]string{}
	for _, id := range []string{"vnets", "zones", "controllers", "ipams", "dns", "fabrics"} {
		out = append(out, map[string]string{"id": id})
	}
	return out, nil
}

// hasPending is has_pending_changes: a zone or VNet whose pending view
// carries changes.
func (n *sdnState) hasPending() bool {
	run := n.runningOrEmpty()
	for _, view := range []map[string]map[string]any{pendingConfig(run.zones, n.pending.zones), pendingConfig(run.vnets, n.pending.vnets)} {
		for _, e := range view {
			if p, ok := e["pending"].(map[string]any); ok && (len(p) > 0 || e["state"] != nil) {
				return true
			}
		}
	}
	return false
}

func lockSDN(c *call) (any, *apiError) {
	var token string
	err := c.sdnLocked("could not acquire lock for SDN config", func() *apiError {
		n := c.s.sdn()
		if !c.p.flag("allow-pending", false) && n.hasPending() {
			return die("configuration has pending changes at /usr/share/perl5/PVE/API2/Network/SDN.pm line 149.")
		}
		token = c.s.newUUID()
		n.lock = token
		return nil
	})
	if err != nil {
		return nil, err
	}
	return token, nil
}

func releaseSDNLock(c *call) (any, *apiError) {
	if c.p.flag("force", false) {
		c.s.sdn().lock = ""
		return nil, nil
	}
	return nil, c.sdnLocked("could not release lock", func() *apiError {
		c.s.sdn().lock = ""
		return nil
	})
}

func rollbackSDN(c *call) (any, *apiError) {
	return nil, c.sdnLocked("could not rollback SDN configuration", func() *apiError {
		n := c.s.sdn()
		n.pending = n.runningOrEmpty().clone()
		if c.p["lock-token"] != "" && c.p.flag("release-lock", true) {
			n.lock = ""
		}
		return nil
	})
}

// applySDN is PUT /cluster/sdn: commit the configuration (a new running
// version), then a reloadnetworkall worker that starts each node's
// network reload and only logs a node it cannot reach.
func applySDN(c *call) (any, *apiError) {
	n := c.s.sdn()
	err := c.sdnLocked("could not commit SDN config", func() *apiError {
		run := n.pending.clone()
		n.running = &run
		n.version++
		if c.p["lock-token"] != "" && c.p.flag("release-lock", true) {
			n.lock = ""
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	nodes := sortedKeys(c.s.nodes)
	upid := c.startTask("reloadnetworkall", "", func(l *taskLog) error {
		for _, node := range nodes {
			l.printf("%s: reloading network config", node)
			if n.unreachable[node] {
				l.printf("command 'pvesh set /nodes/%s/network --regenerate-frr 0' failed: exit code 1", node)
				continue
			}
			c.reloadNode(node)
		}
		return nil
	})
	return upid, nil
}

// reloadNode is `pvesh set /nodes/<node>/network` as root@pam: a srvreload
// worker on the node that writes /etc/network/interfaces.d/sdn from the
// running configuration, then runs ifreload (failing as FailNodeReload
// says), as pve-manager's PVE/API2/Network.pm reload_network_config does
// (commit 14a22df35955): a failed ifreload leaves the new file written
// but its interfaces not up.
func (c *call) reloadNode(node string) {
	n := c.s.sdn()
	sub := &call{srv: c.srv, s: c.s, auth: "root@pam", node: node, p: params{}}
	sub.startTask("srvreload", "networking", func(l *taskLog) error {
		file, warnings := c.s.sdnInterfaces(node, n.runningOrEmpty(), n.version)
		for _, w := range warnings {
			l.printf("%s", w)
		}
		n.nodeFiles[node] = file
		if msg := n.reloadFail[node]; msg != "" {
			return fmt.Errorf("%s", msg)
		}
		n.nodeLive[node] = file
		return nil
	})
}

// sdnInterfaces is generate_etc_network_config for one node: a stanza per
// VNet of its zones (VlanPlugin's rendition; a simple or QinQ VNet as its
// bridge only), and the warnings of VNets it cannot generate.
func (s *state) sdnInterfaces(node string, cfg sdnConfig, version int) (string, []string) {
	ifaces := s.nodeIfaces(node)
	stanzas := map[string][]string{}
	var warnings []string
	for _, id := range vnetsOf(cfg) {
		v := cfg.vnets[id]
		z, ok := cfg.zones[v["zone"]]
		if !ok {
			warnings = append(warnings, fmt.Sprintf("can't generate vnet '%s': zone %s don't exist", id, v["zone"]))
			continue
		}
		if nodes := z["nodes"]; nodes != "" && !containsStr(splitNodes(nodes), node) {
			continue
		}
		uplink := ""
		if z["type"] != "simple" {
			br, ok := ifaces[z["bridge"]]
			if !ok || (br.Type != "bridge" && br.Type != "OVSBridge") {
				warnings = append(warnings, fmt.Sprintf("zone %s : vnet %s : can't find bridge %s at "+
					"/usr/share/perl5/PVE/Network/SDN/Zones/Plugin.pm line 323.", v["zone"], id, z["bridge"]))
				continue
			}
			uplink = vlanUplink(stanzas, z, v, id, br)
		}
		lines := []string{"bridge_ports " + uplink, "bridge_stp off", "bridge_fd 0"}
		if uplink == "" {
			lines[0] = "bridge_ports none"
		}
		if v["vlanaware"] == "1" {
			lines = append(lines, "bridge-vlan-aware yes", "bridge-vids 2-4094")
		}
		if m := z["mtu"]; m != "" {
			lines = append(lines, "mtu "+m)
		}
		if a := v["alias"]; a != "" {
			lines = append(lines, "alias "+a)
		}
		stanzas[id] = lines
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#version:%d\n", version)
	for _, name := range sortedKeys(stanzas) {
		fmt.Fprintf(&b, "\nauto %s\niface %s\n", name, name)
		for _, l := range stanzas[name] {
			fmt.Fprintf(&b, "\t%s\n", l)
		}
	}
	return b.String(), warnings
}

// vlanUplink returns the VNet bridge's uplink on a VLAN or QinQ zone's
// bridge: <bridge>.<tag> on a VLAN-aware bridge, else the veth pair to a
// <bridge>v<tag> bridge, whose stanzas it adds.
func vlanUplink(stanzas map[string][]string, z, v sdnSection, id string, br Interface) string {
	tag := v["tag"]
	if z["type"] == "qinq" {
		tag = z["tag"]
		if v["tag"] != "" {
			tag += "." + v["tag"]
		}
	}
	if br.VLANAware {
		return z["bridge"] + "." + tag
	}
	uplink, peer := "ln_"+id, "pr_"+id
	mtu := []string{}
	if m := z["mtu"]; m != "" {
		mtu = []string{"mtu " + m}
	}
	stanzas[uplink] = append([]string{"link-type veth", "veth-peer-name " + peer}, mtu...)
	stanzas[peer] = append([]string{"link-type veth", "veth-peer-name " + uplink}, mtu...)
	ports := ""
	for _, p := range strings.Fields(br.Ports) {
		ports += " " + p + "." + tag
	}
	stanzas[z["bridge"]+"v"+tag] = append([]string{"bridge_ports " + ports + " " + peer, "bridge_stp off", "bridge_fd 0"}, mtu...)
	return uplink
}

func splitNodes(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' })
}

// dryRunSDN is GET /cluster/sdn/dry-run: the node's current
// /etc/network/interfaces.d/sdn against the one the pending configuration
// would give (diff -u; no key when they are equal). The fake has no FRR.
func dryRunSDN(c *call) (any, *apiError) {
	node := c.p["node"]
	if err := c.s.unreachableErr(node); err != nil {
		return nil, err
	}
	if err := c.nodeExists(node); err != nil {
		return nil, err
	}
	n := c.s.sdn()
	version := n.version
	if version == 0 {
		version = 1
	}
	next, _ := c.s.sdnInterfaces(node, n.pending, version)
	cur := n.nodeFiles[node]
	out := map[string]any{"frr-diff": nil, "interfaces-diff": nil}
	if cur == next {
		return out, nil
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(cur), B: difflib.SplitLines(next),
		FromFile: "/etc/network/interfaces.d/sdn", ToFile: "/tmp/pve-sdn-interfaces", Context: 3})
	if err != nil {
		return nil, die("diff failed: %v", err)
	}
	out["interfaces-diff"] = diff
	return out, nil
}
