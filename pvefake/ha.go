package pvefake

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// DefaultHAFenceDelay is how long a node stays offline before the fake's HA
// manager recovers its services. In PVE the CRM marks a service 'fence'
// once its node has been offline for 60 s (NodeStatus.pm $fence_delay) and
// recovers it after the node's LRM agent lock expired (about two minutes
// in all); tests want it compressed.
const DefaultHAFenceDelay = 500 * time.Millisecond

// WithHAFenceDelay sets the time from a node going offline to the recovery
// of its HA services (DefaultHAFenceDelay unless set).
func WithHAFenceDelay(d time.Duration) Option { return func(c *config) { c.fenceDelay = &d } }

// haResource is a section of /etc/pve/ha/resources.cfg ("vm: 100").
type haResource struct {
	sid     string // vm:100
	typ     string // vm
	name    string // 100
	opts    map[string]string
	pending bool // fenced, waiting for a recovery node
	// migrateFailed is the node a live migration to failed on the
	// guest's PCI devices: the manager tries again each round, and the
	// fake, which runs a round on every request, logs the failure once.
	migrateFailed string
}

// haGroup is a section of /etc/pve/ha/groups.cfg (PVE 8).
type haGroup struct {
	id    string
	nodes map[string]int // node -> priority
	opts  map[string]string
}

// haRule is a section of /etc/pve/ha/rules.cfg (PVE 9).
type haRule struct {
	id        string
	typ       string // node-affinity, resource-affinity
	resources map[string]bool
	nodes     map[string]int
	opts      map[string]string // affinity, strict, disable, comment
	order     int
}

func (r *haRule) disabled() bool { return r.opts["disable"] == "1" }

// haState is what pve-ha-manager keeps: the three configuration files and
// the part of the manager status the fake derives state from (which nodes
// are offline since when, and which of them are fenced).
type haState struct {
	resources map[string]*haResource
	groups    map[string]*haGroup
	rules     map[string]*haRule
	offline   map[string]time.Time
	fenced    map[string]bool
	log       []string
}

func (s *state) ha() *haState {
	if s.haSt == nil {
		s.haSt = &haState{resources: map[string]*haResource{}, groups: map[string]*haGroup{},
			rules: map[string]*haRule{}, offline: map[string]time.Time{}, fenced: map[string]bool{}}
	}
	return s.haSt
}

// reqState is the resource's requested state, read_and_check_resources_config's
// default ('started', 'enabled' an alias of it).
func (r *haResource) reqState() string {
	switch st := r.opts["state"]; st {
	case "", "enabled":
		return "started"
	default:
		return st
	}
}

// vmid is the VMID of a vm: or ct: resource, 0 for others.
func (r *haResource) vmid() int {
	n, _ := strconv.Atoi(r.name)
	return n
}

// parseSID is PVE::HA::Config::parse_sid: "vm:100", or a bare VMID looked
// up in the VM list.
func (s *state) parseSID(sid string) (string, string, string, error) {
	if m := bareVMIDRe.FindStringSubmatch(sid); m != nil {
		n, _ := strconv.Atoi(m[1])
		if _, ok := s.vms[n]; !ok {
			return "", "", "", fmt.Errorf("unable do detect SID from VMID - VM/CT %s does not exist", m[1])
		}
		return "vm:" + m[1], "vm", m[1], nil
	}
	if m := sidRe.FindStringSubmatch(sid); m != nil {
		return sid, m[1], m[2], nil
	}
	return "", "", "", fmt.Errorf("unable to parse service id '%s'", sid)
}

var (
	bareVMIDRe = regexp.MustCompile(`^(\d+)$`)
	sidRe      = regexp.MustCompile(`^(\S+):(\S+)$`)
	// haResourceIDRe is pve_verify_ha_resource_id (PVE::HA::Tools).
	haResourceIDRe = regexp.MustCompile(`^[a-z]+:\S+$`)
	// haResourceOrVMIDRe is pve_verify_ha_resource_or_vm_id.
	haResourceOrVMIDRe = regexp.MustCompile(`^([a-z]+:\S+|\d+)$`)
	// haNodeRe is pve_verify_ha_node and pve_verify_ha_group_node.
	haNodeRe = regexp.MustCompile(`^([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)(:(\d+))?$`)
	// haVMNameRe is PVEVM.pm's verify_name.
	haVMNameRe = regexp.MustCompile(`^[1-9][0-9]+$`)
	// configIDRe is pve-common's $CONFIGID_RE.
	configIDRe = regexp.MustCompile(`(?i)^[a-z][a-z0-9_-]+$`)
)

// ParseHAResourceList parses a pve-ha-resource-id-list ("vm:100,vm:101")
// as PVE::JSONSchema's check_format does a "-list" format: split_list,
// then pve_verify_ha_resource_id on each item. It returns the set as a
// sorted list without duplicates, as PVE::HA::Rules encode_value writes it.
func ParseHAResourceList(v string) ([]string, error) {
	seen := map[string]bool{}
	for _, item := range splitPVEList(v) {
		if !haResourceIDRe.MatchString(item) {
			return nil, errString("value does not look like a valid ha resource id")
		}
		seen[item] = true
	}
	return sortedKeys(seen), nil
}

// ParseHANodeList parses a pve-ha-node-list ("pve1:2,pve2") as check_format
// and PVE::HA::Tools::parse_node_priority do: a node without a priority has
// priority 0; a node named twice keeps its last priority.
func ParseHANodeList(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, item := range splitPVEList(v) {
		m := haNodeRe.FindStringSubmatch(item)
		if m == nil {
			return nil, errString("value does not look like a valid ha node")
		}
		prio := 0
		if m[4] != "" {
			n, err := strconv.Atoi(m[4])
			if err != nil {
				return nil, errString("value does not look like a valid ha node")
			}
			prio = n
		}
		out[m[1]] = prio
	}
	return out, nil
}

// splitPVEList is PVE::Tools::split_list.
func splitPVEList(v string) []string {
	if strings.IndexByte(v, 0) >= 0 {
		var out []string
		for _, s := range strings.Split(v, "\x00") {
			if s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(",; \t\n\v\f\r", r) })
}

// encodeNodes is the nodes property as the rules and groups plugins write
// it: sorted, "node:prio", the priority left out when 0.
func encodeNodes(nodes map[string]int) string {
	var out []string
	for _, n := range sortedKeys(nodes) {
		if p := nodes[n]; p != 0 {
			out = append(out, n+":"+strconv.Itoa(p))
		} else {
			out = append(out, n)
		}
	}
	return strings.Join(out, ",")
}

// digest is the SHA-1 of a section config file as the fake renders it;
// PVE's digest is the SHA-1 of the file's bytes.
func digestOf(text string) string {
	sum := sha1.Sum([]byte(text))
	return hex.EncodeToString(sum[:])
}

// section renders one section of a section config file: its header, the
// fixed lines, then the options sorted.
func section(b *strings.Builder, header string, fixed []string, opts map[string]string) {
	b.WriteString(header + "\n")
	for _, l := range fixed {
		b.WriteString("\t" + l + "\n")
	}
	for _, k := range sortedKeys(opts) {
		fmt.Fprintf(b, "\t%s %s\n", k, opts[k])
	}
	b.WriteString("\n")
}

func (h *haState) resourcesDigest() string {
	var b strings.Builder
	for _, sid := range sortedKeys(h.resources) {
		r := h.resources[sid]
		section(&b, r.typ+": "+r.name, nil, r.opts)
	}
	return digestOf(b.String())
}

func (h *haState) groupsDigest() string {
	var b strings.Builder
	for _, id := range sortedKeys(h.groups) {
		g := h.groups[id]
		section(&b, "group: "+id, []string{"nodes " + encodeNodes(g.nodes)}, g.opts)
	}
	return digestOf(b.String())
}

func (h *haState) rulesDigest() string {
	var b strings.Builder
	for _, r := range h.sortedRules() {
		fixed := []string{"resources " + strings.Join(sortedKeys(r.resources), ",")}
		if r.nodes != nil {
			fixed = append(fixed, "nodes "+encodeNodes(r.nodes))
		}
		section(&b, r.typ+": "+r.id, fixed, r.opts)
	}
	return digestOf(b.String())
}

// sortedRules is the rules in their order in rules.cfg.
func (h *haState) sortedRules() []*haRule {
	out := make([]*haRule, 0, len(h.rules))
	for _, r := range h.rules {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].order != out[j].order {
			return out[i].order < out[j].order
		}
		return out[i].id < out[j].id
	})
	return out
}

// online reports whether a node is a quorate cluster member.
func (s *state) online(node string) bool {
	_, off := s.ha().offline[node]
	return !off
}

// quorate reports whether more than half of the nodes are online
// (corosync's votequorum with one vote a node).
func (s *state) quorate() bool {
	return len(s.nodes) > 2*len(s.ha().offline)
}

// haServiceState is the service's state in the CRM's manager status, as
// /cluster/resources shows it (hastate) and status/current's ha.state:
// 'started' and 'stopped' (disabled services are stopped), 'fence' while
// the node is offline and not yet fenced, 'recovery' while no node can take
// the service, and for ignored services the configured 'ignored'.
func (s *state) haServiceState(r *haResource) string {
	st := r.reqState()
	switch {
	case st == "ignored":
		return "ignored"
	case r.pending:
		return "recovery"
	}
	if g, ok := s.vms[r.vmid()]; ok && r.typ == "vm" && !s.online(g.node) && st != "disabled" {
		return "fence"
	}
	if st == "started" {
		return "started"
	}
	return "stopped"
}

// haResourceOf returns the HA resource of a guest, or nil.
func (s *state) haResourceOf(vmid int) *haResource {
	return s.ha().resources["vm:"+strconv.Itoa(vmid)]
}

// vmIsHAManaged is PVE::HA::Config::vm_is_ha_managed without a state: a
// configured resource that is not 'ignored'.
func (s *state) vmIsHAManaged(vmid int) bool {
	r := s.haResourceOf(vmid)
	return r != nil && r.reqState() != "ignored"
}

// enact is what the CRM and the LRM make of a resource's requested state on
// an online node: 'started' starts the guest, 'stopped' and 'disabled' stop
// it (next_state_started, next_state_request_stop; the LRM runs vm_start
// and vm_shutdown). 'ignored' leaves it alone.
func (s *state) enact(r *haResource) {
	g, ok := s.vms[r.vmid()]
	if !ok || r.typ != "vm" || !s.online(g.node) || r.pending {
		return
	}
	switch r.reqState() {
	case "started":
		if g.conf["template"] != "1" && !g.running {
			_ = s.startGuest(g) // a failed start leaves the guest stopped
		}
	case "stopped", "disabled":
		s.stopGuest(g)
	}
}

// SetNodeOnline takes a node out of the cluster (false) or brings it back.
// An offline node answers no proxied request (595, as SetNodeUnreachable),
// shows as offline in /nodes, /cluster/status and /cluster/resources, and
// its guests stop and show status "unknown". After the fence delay
// (WithHAFenceDelay), and while the remaining nodes are quorate, the HA
// manager recovers its 'started' and 'stopped' HA services to other nodes
// (next_state_recovery in src/PVE/HA/Manager.pm); guests without HA stay
// on the offline node. A node coming back starts its guests with onboot=1
// (pve-manager's startall) and takes services no other node could take.
func (srv *Server) SetNodeOnline(node string, online bool) error {
	return srv.withState(func(s *state) error {
		if _, ok := s.nodes[node]; !ok {
			return fmt.Errorf("cannot set node %q online: no such cluster node", node)
		}
		h := s.ha()
		if _, off := h.offline[node]; off == !online {
			return nil
		}
		s.sdn().unreachable[node] = !online
		if !online {
			h.offline[node] = s.now()
			for _, g := range s.vms {
				if g.node == node {
					s.stopGuest(g)
				}
			}
			h.logf("node '%s': state changed from 'online' => 'unknown'", node)
			return nil
		}
		delete(h.offline, node)
		delete(h.fenced, node)
		h.logf("node '%s': state changed from 'unknown' => 'online'", node)
		for _, id := range s.vmIDs() {
			g := s.vms[id]
			if g.node == node && !s.vmIsHAManaged(id) && onboot(g.conf["onboot"]) && g.conf["template"] != "1" && !g.running {
				_ = s.startGuest(g) // startall goes on past a guest that fails
			}
		}
		s.haTick()
		for _, sid := range sortedKeys(h.resources) {
			s.enact(h.resources[sid])
		}
		return nil
	})
}

func onboot(v string) bool { return v == "1" }

// NodeOnline reports whether a node is online.
func (srv *Server) NodeOnline(node string) bool {
	var out bool
	_ = srv.withState(func(s *state) error { out = s.online(node); return nil })
	return out
}

// HALog returns the HA manager's log lines (fencing and recovery), in the
// words of src/PVE/HA/Manager.pm.
func (srv *Server) HALog() []string {
	var out []string
	_ = srv.withState(func(s *state) error { out = append(out, s.ha().log...); return nil })
	return out
}

func (h *haState) logf(format string, args ...any) {
	h.log = append(h.log, fmt.Sprintf(format, args...))
}

// haTick runs the CRM's fencing and recovery: nodes offline for the fence
// delay are fenced (the fake's fence always succeeds, as the watchdog's
// does) while the cluster is quorate, and each 'started' or 'stopped'
// service on a fenced node is recovered to the node select_service_node
// picks ('best-score'); a service no node can take stays in 'recovery' and
// is retried on the next tick.
func (s *state) haTick() {
	if s.haSt == nil {
		return
	}
	h := s.ha()
	if !s.quorate() {
		return
	}
	defer s.separate()
	if len(h.offline) == 0 && !h.anyPending() {
		return
	}
	now := s.now()
	for _, n := range sortedKeys(h.offline) {
		if h.fenced[n] || now.Sub(h.offline[n]) < s.fenceDelay {
			continue
		}
		h.fenced[n] = true
		h.logf("fencing: acknowledged - got agent lock for node '%s'", n)
		for _, sid := range sortedKeys(h.resources) {
			r := h.resources[sid]
			g, ok := s.vms[r.vmid()]
			if !ok || r.typ != "vm" || g.node != n {
				continue
			}
			if st := r.reqState(); st == "started" || st == "stopped" {
				r.pending = true
				h.logf("service '%s': state changed from 'fence' to 'recovery'", sid)
			}
		}
	}
	for _, sid := range sortedKeys(h.resources) {
		r := h.resources[sid]
		if !r.pending {
			continue
		}
		g, ok := s.vms[r.vmid()]
		if !ok {
			r.pending = false
			continue
		}
		target := s.selectServiceNode(r, g.node)
		if target == "" {
			h.logf("recovering service '%s' from fenced node '%s' failed, no recovery node found", sid, g.node)
			continue
		}
		if target == g.node {
			h.logf("recover service '%s' to previous failed and fenced node '%s' again", sid, g.node)
		} else {
			h.logf("recover service '%s' from fenced node '%s' to node '%s'", sid, g.node, target)
		}
		g.node = target
		r.pending = false
		s.enact(r)
	}
}

func (h *haState) anyPending() bool {
	for _, r := range h.resources {
		if r.pending {
			return true
		}
	}
	return false
}

// usedNode is the node a service occupies for the scheduler and the
// resource affinity (PVE::HA::Usage::get_used_service_nodes): its node
// when the service is not stopped and the node is online, else "".
func (s *state) usedNode(r *haResource) string {
	g, ok := s.vms[r.vmid()]
	if !ok || r.typ != "vm" || !s.online(g.node) {
		return ""
	}
	switch s.haServiceState(r) {
	case "stopped", "ignored":
		return ""
	}
	return g.node
}

// selectServiceNode is select_service_node (src/PVE/HA/Manager.pm) with
// 'best-score': the online nodes the node affinity (PVE 9's node-affinity
// rule, PVE 8's group) allows, those of its highest priority, without the
// nodes of services in negative resource affinity, narrowed to the node
// most of its positive affinity runs on, then the node with the fewest
// HA services (the 'basic' scheduler), ties broken by name.
func (s *state) selectServiceNode(r *haResource, current string) string {
	online := map[string]bool{}
	for n := range s.nodes {
		if s.online(n) {
			online[n] = true
		}
	}
	pri := s.nodeAffinity(r, online)
	if len(pri) == 0 {
		return ""
	}
	together, separate := s.resourceAffinity(r)
	for n := range separate {
		delete(pri, n)
	}
	if best := majority(together, pri); best != "" {
		for n := range pri {
			if n != best {
				delete(pri, n)
			}
		}
	}
	score := map[string]int{}
	for _, other := range s.ha().resources {
		if n := s.usedNode(other); n != "" {
			score[n]++
		}
	}
	nodes := sortedKeys(pri)
	sort.SliceStable(nodes, func(i, j int) bool { return score[nodes[i]] < score[nodes[j]] })
	if len(nodes) == 0 {
		return ""
	}
	return nodes[0]
}

// majority is apply_positive_resource_affinity's choice: the allowed node
// most positive-affinity services use, or "".
func majority(together map[string]int, allowed map[string]bool) string {
	best, count := "", 0
	for _, n := range sortedKeys(together) {
		if allowed[n] && together[n] > count {
			best, count = n, together[n]
		}
	}
	return best
}

// nodeAffinity is get_node_affinity (src/PVE/HA/Rules/NodeAffinity.pm) on
// PVE 9 and get_service_group's priorities on PVE 8: the allowed online
// nodes of the highest priority. A non-strict rule (an unrestricted group)
// adds every other node with priority -1.
func (s *state) nodeAffinity(r *haResource, online map[string]bool) map[string]bool {
	nodes, strict := s.affinityNodes(r)
	prio := map[string]int{}
	for n := range online {
		if p, ok := nodes[n]; ok {
			prio[n] = p
		} else if nodes == nil || !strict {
			prio[n] = -1
		}
	}
	best := math.MinInt
	for _, p := range prio {
		best = max(best, p)
	}
	out := map[string]bool{}
	for n, p := range prio {
		if p == best {
			out[n] = true
		}
	}
	return out
}

// affinityNodes is the node priorities of the service's node-affinity rule
// (PVE 9) or group (PVE 8), nil without one, and whether it is strict
// (a restricted group).
func (s *state) affinityNodes(r *haResource) (map[string]int, bool) {
	if s.cfg.Version != pveacl.PVE9 {
		if g, ok := s.ha().groups[r.opts["group"]]; ok {
			return g.nodes, g.opts["restricted"] == "1"
		}
		return nil, false
	}
	for _, rule := range s.ha().sortedRules() {
		if rule.typ == "node-affinity" && !rule.disabled() && rule.resources[r.sid] {
			return rule.nodes, rule.opts["strict"] == "1"
		}
	}
	return nil, false
}

// resourceAffinity is get_resource_affinity (src/PVE/HA/Rules/
// ResourceAffinity.pm) over the enabled, feasible rules: how many services
// in positive affinity use each node, and the nodes of services in
// negative affinity.
func (s *state) resourceAffinity(r *haResource) (map[string]int, map[string]bool) {
	together, separate := map[string]int{}, map[string]bool{}
	if s.cfg.Version != pveacl.PVE9 {
		return together, separate
	}
	h := s.ha()
	bad := s.ruleErrors()
	for _, rule := range h.sortedRules() {
		if rule.typ != "resource-affinity" || rule.disabled() || !rule.resources[r.sid] || bad[rule.id] != nil {
			continue
		}
		for sid := range rule.resources {
			other, ok := h.resources[sid]
			if sid == r.sid || !ok {
				continue
			}
			n := s.usedNode(other)
			if n == "" {
				continue
			}
			if rule.opts["affinity"] == "positive" {
				together[n]++
			} else {
				separate[n] = true
			}
		}
	}
	return together, separate
}

// separate is what next_state_started (src/PVE/HA/Manager.pm) does each
// round for a 'started' service on an online node: select_service_node
// with preference 'none' keeps it where it is unless a negative resource
// affinity forbids its node (ResourceAffinity.pm's is_allowed_on_node),
// and then picks another node, to which the service is live-migrated
// ("migrate service 'vm:101' to node 'pve2' (running)"). Services are
// looked at in SID order, so of two that share a node the first moves.
// A guest with PCI devices stays where it is unless they can go live to
// the target (pciLiveMigrate), as QemuMigrate refuses the migration.
func (s *state) separate() {
	if s.cfg.Version != pveacl.PVE9 {
		return
	}
	h := s.ha()
	for _, sid := range sortedKeys(h.resources) {
		r := h.resources[sid]
		g, ok := s.vms[r.vmid()]
		if !ok || r.typ != "vm" || r.pending || r.reqState() != "started" || !s.online(g.node) {
			continue
		}
		if _, apart := s.resourceAffinity(r); !apart[g.node] {
			continue
		}
		target := s.selectServiceNode(r, g.node)
		if target == "" || target == g.node {
			continue
		}
		if err := s.pciLiveMigrate(g, target); err != nil {
			if r.migrateFailed != target {
				h.logf("migrate service '%s' to node '%s' (running)", sid, target)
				h.logf("service '%s' - migration failed (exit code 1)", sid)
				r.migrateFailed = target
			}
			continue
		}
		h.logf("migrate service '%s' to node '%s' (running)", sid, target)
		g.node, r.migrateFailed = target, ""
	}
}
