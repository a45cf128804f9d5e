package pvefake

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// HA configuration, as pve-ha-manager's src/PVE/API2/HA/Resources.pm,
// Groups.pm and Rules.pm serve it (pve-ha-manager 4.0.7 for PVE 8, 5.0.8
// for PVE 9.1): Sys.Audit on / to read, Sys.Console on / to change, on
// both versions. PVE 9 adds the rules and the resources' failback and
// answers every groups method with "ha groups have been migrated to
// rules" (have_groups_been_migrated: groups.cfg holds no group, which is
// how a new PVE 9 cluster, and an upgraded one after the CRM's migration,
// has it). PVE 8 has no rules: their paths answer 501.

func fmtHAResourceOrVMID(v string) error {
	if !haResourceOrVMIDRe.MatchString(v) {
		return errString("value does not look like a valid ha resource id")
	}
	return nil
}

func fmtConfigID(v string) error {
	if !configIDRe.MatchString(v) {
		return fmt.Errorf("invalid configuration ID '%s'", v)
	}
	return nil
}

func fmtHAResourceList(v string) error { _, err := ParseHAResourceList(v); return err }
func fmtHANodeList(v string) error     { _, err := ParseHANodeList(v); return err }

func fmtHAGroupNodeList(v string) error {
	if _, err := ParseHANodeList(v); err != nil {
		return errString("value does not look like a valid ha group node")
	}
	return nil
}

func haRoutes(c config) []*route {
	audit := perm{path: "/", privs: []string{"Sys.Audit"}}
	console := perm{path: "/", privs: []string{"Sys.Console"}}
	pve9 := c.version == pveacl.PVE9
	sid := param{name: "sid", format: fmtHAResourceOrVMID}
	min0 := 0
	resOpts := []param{{name: "state", optional: true, enum: []string{"started", "stopped", "enabled", "disabled", "ignored"}},
		{name: "group", optional: true, format: fmtConfigID}, {name: "max_restart", typ: tInt, optional: true, min: &min0},
		{name: "max_relocate", typ: tInt, optional: true, min: &min0}, {name: "comment", optional: true, maxLen: 4096}}
	if pve9 {
		resOpts = append(resOpts, opt("failback", tBool))
	}
	update := []param{{name: "digest", optional: true, maxLen: 64}, {name: "delete", optional: true, maxLen: 4096, format: fmtList(fmtConfigID)}}
	delParams := []param{sid}
	if pve9 {
		delParams = append(delParams, opt("purge", tBool))
	}
	group := param{name: "group", format: fmtConfigID}
	groupOpts := []param{{name: "restricted", typ: tBool, optional: true}, {name: "nofailback", typ: tBool, optional: true},
		{name: "comment", optional: true, maxLen: 4096}}
	rs := []*route{
		{method: "GET", path: "/cluster/ha/resources", check: audit, handle: listHAResources,
			schema: []param{{name: "type", optional: true, enum: []string{"ct", "vm"}}}},
		{method: "GET", path: "/cluster/ha/resources/{sid}", check: audit, handle: readHAResource, schema: []param{sid}},
		{method: "POST", path: "/cluster/ha/resources", check: console, handle: createHAResource,
			schema: append([]param{sid, {name: "type", optional: true, enum: []string{"ct", "vm"}}}, resOpts...)},
		{method: "PUT", path: "/cluster/ha/resources/{sid}", check: console, handle: updateHAResource,
			schema: append(append([]param{sid}, resOpts...), update...)},
		{method: "DELETE", path: "/cluster/ha/resources/{sid}", check: console, handle: deleteHAResource, schema: delParams},
		{method: "GET", path: "/cluster/ha/groups", check: audit, handle: listHAGroups},
		{method: "GET", path: "/cluster/ha/groups/{group}", check: audit, handle: readHAGroup, schema: []param{group}},
		{method: "POST", path: "/cluster/ha/groups", check: console, handle: createHAGroup,
			schema: append([]param{group, {name: "type", optional: true, enum: []string{"group"}},
				{name: "nodes", format: fmtHAGroupNodeList}}, groupOpts...)},
		{method: "PUT", path: "/cluster/ha/groups/{group}", check: console, handle: updateHAGroup,
			schema: append(append([]param{group, {name: "nodes", optional: true, format: fmtHAGroupNodeList}}, groupOpts...), update...)},
		{method: "DELETE", path: "/cluster/ha/groups/{group}", check: console, handle: deleteHAGroup, schema: []param{group}},
	}
	if pve9 {
		rs = append(rs, ruleRoutes(audit, console)...)
	}
	return rs
}

// groupsMigrated is the fake's have_groups_been_migrated: always on PVE 9.
func (c *call) groupsMigrated() bool { return c.s.cfg.Version == pveacl.PVE9 }

func haNumber(k, v string) any {
	switch k {
	case "max_restart", "max_relocate", "failback", "restricted", "nofailback", "strict", "disable":
		n, _ := strconv.Atoi(v)
		return n
	}
	return v
}

// haResourceEntry is Resources.pm's api_copy_config: the section's
// options, sid, type and digest; on PVE 9 without group.
func (c *call) haResourceEntry(r *haResource, digest string) map[string]any {
	e := map[string]any{"sid": r.sid, "type": r.typ, "digest": digest}
	for k, v := range r.opts {
		e[k] = haNumber(k, v)
	}
	if c.groupsMigrated() {
		delete(e, "group")
	}
	return e
}

func listHAResources(c *call) (any, *apiError) {
	h := c.s.ha()
	digest := h.resourcesDigest()
	out := []map[string]any{}
	for _, sid := range sortedKeys(h.resources) {
		r := h.resources[sid]
		if t := c.p["type"]; t != "" && t != r.typ {
			continue
		}
		e := c.haResourceEntry(r, digest)
		if g := r.opts["group"]; g != "" && !c.groupsMigrated() && h.groups[g] == nil {
			e["errors"] = map[string]string{"group": fmt.Sprintf("group '%s' does not exist", g)}
		}
		out = append(out, e)
	}
	return out, nil
}

func readHAResource(c *call) (any, *apiError) {
	sid, _, _, err := c.s.parseSID(c.p["sid"])
	if err != nil {
		return nil, die("%v", err)
	}
	r, ok := c.s.ha().resources[sid]
	if !ok {
		return nil, die("no such resource '%s'", sid)
	}
	return c.haResourceEntry(r, c.s.ha().resourcesDigest()), nil
}

var haResourceKeys = []string{"state", "group", "max_restart", "max_relocate", "comment", "failback"}

// createHAResource is Resources.pm's create: parse_sid, the type check, the
// PVE 9 group refusal, verify_name and exists of the vm plugin
// (src/PVE/HA/Resources/PVEVM.pm), then the section under the HA lock.
// The CRM then acts on the requested state (enact).
func createHAResource(c *call) (any, *apiError) {
	sid, typ, name, err := c.s.parseSID(c.p["sid"])
	if err != nil {
		return nil, die("%v", err)
	}
	if t := c.p["type"]; t != "" && t != typ {
		return nil, die("types does not match")
	}
	if c.p.has("group") && c.groupsMigrated() {
		return nil, die("invalid parameter 'group': ha groups have been migrated to rules")
	}
	if typ != "vm" && typ != "ct" {
		return nil, die("unknown section type '%s'", typ)
	}
	if !haVMNameRe.MatchString(name) {
		return nil, die("invalid VMID")
	}
	vmid, _ := strconv.Atoi(name)
	if _, ok := c.s.vms[vmid]; !ok || typ == "ct" {
		return nil, die("resource '%s' does not exist in cluster", sid)
	}
	h := c.s.ha()
	if _, ok := h.resources[sid]; ok {
		return nil, die("create resource failed: resource ID '%s' already defined", sid)
	}
	r := &haResource{sid: sid, typ: typ, name: name, opts: map[string]string{}}
	for _, k := range haResourceKeys {
		if v, ok := c.p[k]; ok {
			r.opts[k] = v
		}
	}
	h.resources[sid] = r
	c.s.enact(r)
	return nil, nil
}

// updateHAResource is Resources.pm's update and update_resources_config
// (src/PVE/HA/Config.pm): the group check, then under the HA lock the
// digest, the section, the new options and the deleted ones.
func updateHAResource(c *call) (any, *apiError) {
	sid, typ, _, err := c.s.parseSID(c.p["sid"])
	if err != nil {
		return nil, die("%v", err)
	}
	h := c.s.ha()
	if g := c.p["group"]; g != "" {
		if c.groupsMigrated() {
			return nil, die("invalid parameter 'group': ha groups have been migrated to rules")
		}
		if h.groups[g] == nil {
			return nil, die("HA group '%s' does not exist", g)
		}
	}
	const fail = "update resources config failed"
	if d := c.p["digest"]; d != "" && d != h.resourcesDigest() {
		return nil, die("%s: detected modified configuration - file changed by other user? Try again.", fail)
	}
	r, ok := h.resources[sid]
	if !ok {
		return nil, die("%s: no such resource '%s'", fail, sid)
	}
	opts := map[string]string{}
	for k, v := range r.opts {
		opts[k] = v
	}
	for _, k := range haResourceKeys {
		if v, ok := c.p[k]; ok {
			opts[k] = v
		}
	}
	allowed := haResourceKeys
	if !c.groupsMigrated() {
		allowed = allowed[:len(allowed)-1]
	}
	for _, k := range pveacl.SplitList(c.p["delete"]) {
		if !containsStr(allowed, k) || typ != "vm" {
			return nil, die("%s: no such option '%s'", fail, k)
		}
		delete(opts, k)
	}
	r.opts = opts
	c.s.enact(r)
	return nil, nil
}

// deleteHAResource is Resources.pm's delete and delete_service_from_config:
// with purge (PVE 9, default on) the resource also leaves every rule, and a
// rule left without resources goes.
func deleteHAResource(c *call) (any, *apiError) {
	sid, _, _, err := c.s.parseSID(c.p["sid"])
	if err != nil {
		return nil, die("%v", err)
	}
	h := c.s.ha()
	if _, ok := h.resources[sid]; !ok {
		return nil, die("cannot delete service '%s', not HA managed!", sid)
	}
	h.deleteService(sid, c.groupsMigrated() && c.p.flag("purge", true))
	return nil, nil
}

// deleteService is delete_service_from_config.
func (h *haState) deleteService(sid string, purge bool) {
	delete(h.resources, sid)
	if !purge {
		return
	}
	for id, rule := range h.rules {
		delete(rule.resources, sid)
		if len(rule.resources) == 0 {
			delete(h.rules, id)
		}
	}
	h.renumber()
}

// haGroupEntry is Groups.pm's api_copy_config.
func haGroupEntry(g *haGroup, digest string) map[string]any {
	e := map[string]any{"group": g.id, "type": "group", "digest": digest, "nodes": encodeNodes(g.nodes)}
	for k, v := range g.opts {
		e[k] = haNumber(k, v)
	}
	return e
}

func listHAGroups(c *call) (any, *apiError) {
	if c.groupsMigrated() {
		return nil, die("cannot index groups: ha groups have been migrated to rules")
	}
	h := c.s.ha()
	out := []map[string]any{}
	for _, id := range sortedKeys(h.groups) {
		out = append(out, haGroupEntry(h.groups[id], h.groupsDigest()))
	}
	return out, nil
}

func readHAGroup(c *call) (any, *apiError) {
	if c.groupsMigrated() {
		return nil, die("cannot read group: ha groups have been migrated to rules")
	}
	g, ok := c.s.ha().groups[c.p["group"]]
	if !ok {
		return nil, die("no such ha group '%s'", c.p["group"])
	}
	return haGroupEntry(g, c.s.ha().groupsDigest()), nil
}

var haGroupKeys = []string{"restricted", "nofailback", "comment"}

func createHAGroup(c *call) (any, *apiError) {
	if c.groupsMigrated() {
		return nil, die("cannot create group: ha groups have been migrated to rules")
	}
	id := c.p["group"]
	h := c.s.ha()
	if _, ok := h.groups[id]; ok {
		return nil, die("create ha group failed: ha group ID '%s' already defined", id)
	}
	nodes, _ := ParseHANodeList(c.p["nodes"])
	g := &haGroup{id: id, nodes: nodes, opts: map[string]string{}}
	for _, k := range haGroupKeys {
		if v, ok := c.p[k]; ok {
			g.opts[k] = v
		}
	}
	h.groups[id] = g
	return nil, nil
}

func updateHAGroup(c *call) (any, *apiError) {
	if c.groupsMigrated() {
		return nil, die("cannot update group: ha groups have been migrated to rules")
	}
	const fail = "update ha group failed"
	h := c.s.ha()
	if d := c.p["digest"]; d != "" && d != h.groupsDigest() {
		return nil, die("%s: detected modified configuration - file changed by other user? Try again.", fail)
	}
	g, ok := h.groups[c.p["group"]]
	if !ok {
		return nil, die("%s: no such ha group '%s'", fail, c.p["group"])
	}
	ng := &haGroup{id: g.id, nodes: g.nodes, opts: map[string]string{}}
	for k, v := range g.opts {
		ng.opts[k] = v
	}
	if c.p.has("nodes") {
		ng.nodes, _ = ParseHANodeList(c.p["nodes"])
	}
	for _, k := range haGroupKeys {
		if v, ok := c.p[k]; ok {
			ng.opts[k] = v
		}
	}
	for _, k := range pveacl.SplitList(c.p["delete"]) {
		switch {
		case k == "nodes":
			return nil, die("%s: unable to delete required option 'nodes'", fail)
		case !containsStr(haGroupKeys, k):
			return nil, die("%s: no such option '%s'", fail, k)
		}
		delete(ng.opts, k)
	}
	h.groups[g.id] = ng
	return nil, nil
}

func deleteHAGroup(c *call) (any, *apiError) {
	if c.groupsMigrated() {
		return nil, die("cannot delete group: ha groups have been migrated to rules")
	}
	id := c.p["group"]
	h := c.s.ha()
	for _, sid := range sortedKeys(h.resources) {
		if h.resources[sid].opts["group"] == id {
			return nil, die("delete ha group failed: ha group is used by service '%s'", sid)
		}
	}
	delete(h.groups, id)
	return nil, nil
}

// ruleRoutes are Rules.pm's methods. The create and update schemas are
// PVE::HA::Rules' isolated ones: the type selects the properties, so a
// node-affinity rule refuses affinity and a resource-affinity rule refuses
// nodes and strict by name.
func ruleRoutes(audit, console check) []*route {
	rule := param{name: "rule", format: fmtConfigID}
	ruleTypes := []string{"node-affinity", "resource-affinity"}
	return []*route{
		{method: "GET", path: "/cluster/ha/rules", check: audit, handle: listHARules,
			schema: []param{{name: "type", optional: true, enum: ruleTypes}, opt("resource", tString)}},
		{method: "GET", path: "/cluster/ha/rules/{rule}", check: audit, handle: readHARule, schema: []param{rule}},
		{method: "POST", path: "/cluster/ha/rules", check: console, handle: createHARule,
			schema: []param{rule, {name: "type", enum: ruleTypes}}, extra: ruleProperty},
		{method: "PUT", path: "/cluster/ha/rules/{rule}", check: console, handle: updateHARule,
			schema: []param{rule, {name: "type", enum: ruleTypes}, {name: "digest", optional: true, maxLen: 64},
				{name: "delete", optional: true, maxLen: 4096, format: fmtList(fmtConfigID)}}, extra: ruleProperty},
		{method: "DELETE", path: "/cluster/ha/rules/{rule}", check: console, handle: deleteHARule, schema: []param{rule}},
	}
}

// ruleProperty lets the type's properties through the route's validation;
// the handler validates them against the type's schema.
func ruleProperty(k string) bool {
	switch k {
	case "resources", "nodes", "strict", "affinity", "disable", "comment":
		return true
	}
	return false
}

// ruleSchema is the type's part of the isolated schema; update makes every
// property optional.
func ruleSchema(typ string, update bool) []param {
	out := []param{{name: "resources", format: fmtHAResourceList}, opt("disable", tBool),
		{name: "comment", optional: true, maxLen: 4096}}
	if typ == "node-affinity" {
		out = append(out, param{name: "nodes", format: fmtHANodeList}, opt("strict", tBool))
	} else {
		out = append(out, param{name: "affinity", enum: []string{"positive", "negative"}})
	}
	if update {
		for i := range out {
			out[i].optional = true
		}
	}
	return out
}

// validateRule validates the properties against the schema of a rule type
// (on update the stored rule's type, whose plugin check_config uses).
func (c *call) validateRule(typ string, update bool) *apiError {
	fixed := []param{{name: "rule"}, {name: "type"}}
	if update {
		fixed = append(fixed, param{name: "digest", optional: true}, param{name: "delete", optional: true})
	}
	return validate(c.p, c.lists, append(fixed, ruleSchema(typ, update)...), nil)
}

// haRuleEntry is Rules.pm's get_api_ha_rule: the section with rule, digest,
// order, the encoded resources and nodes, and the rule's feasibility errors.
func haRuleEntry(r *haRule, digest string, errs map[string][]string) map[string]any {
	e := map[string]any{"rule": r.id, "type": r.typ, "digest": digest, "order": r.order,
		"resources": strings.Join(sortedKeys(r.resources), ",")}
	if r.nodes != nil {
		e["nodes"] = encodeNodes(r.nodes)
	}
	for k, v := range r.opts {
		e[k] = haNumber(k, v)
	}
	if len(errs) > 0 {
		m := map[string]string{}
		for k, v := range errs {
			m[k] = strings.Join(v, ", ")
		}
		e["errors"] = m
	}
	return e
}

func listHARules(c *call) (any, *apiError) {
	h := c.s.ha()
	errs := c.s.ruleErrors()
	out := []map[string]any{}
	for _, r := range h.sortedRules() {
		if t := c.p["type"]; t != "" && r.typ != t {
			continue
		}
		if res := c.p["resource"]; c.p.has("resource") && !r.resources[res] {
			continue
		}
		out = append(out, haRuleEntry(r, h.rulesDigest(), errs[r.id]))
	}
	return out, nil
}

func readHARule(c *call) (any, *apiError) {
	h := c.s.ha()
	r, ok := h.rules[c.p["rule"]]
	if !ok {
		return nil, die("no such ha rule '%s'", c.p["rule"])
	}
	return haRuleEntry(r, h.rulesDigest(), c.s.ruleErrors()[r.id]), nil
}

// applyRuleParams is check_config's decoding of the rule's properties.
func (c *call) applyRuleParams(r *haRule) {
	if v, ok := c.p["resources"]; ok {
		list, _ := ParseHAResourceList(v)
		r.resources = map[string]bool{}
		for _, sid := range list {
			r.resources[sid] = true
		}
	}
	if v, ok := c.p["nodes"]; ok {
		r.nodes, _ = ParseHANodeList(v)
	}
	for _, k := range []string{"affinity", "strict", "comment", "disable"} {
		if v, ok := c.p[k]; ok {
			r.opts[k] = v
		}
	}
	if r.opts["disable"] == "0" {
		delete(r.opts, "disable") // delete $param->{disable} if !$param->{disable}
	}
}

// assertRule is the checks create_rule and update_rule run under the HA
// lock: the resources must be HA resources, the nodes cluster nodes (the
// local node always passes), and the rule feasible with the others.
func (c *call) assertRule(r *haRule, fail string) *apiError {
	h := c.s.ha()
	var unmanaged, missing []string
	for _, sid := range sortedKeys(r.resources) {
		if h.resources[sid] == nil {
			unmanaged = append(unmanaged, sid)
		}
	}
	if len(unmanaged) > 0 && c.p.has("resources") {
		return die("%s: cannot use unmanaged resource(s) %s.", fail, strings.Join(unmanaged, ", "))
	}
	if c.p.has("nodes") {
		for _, n := range sortedKeys(r.nodes) {
			if _, ok := c.s.nodes[n]; !ok && n != c.s.defaultNode() {
				missing = append(missing, n)
			}
		}
	}
	if len(missing) > 0 {
		return die("%s: cannot use non-existant node(s) %s.", fail, strings.Join(missing, ", "))
	}
	if errs := c.s.ruleErrors()[r.id]; len(errs) > 0 {
		e := &apiError{Status: 400, Msg: fmt.Sprintf("Rule '%s' is invalid.\n", r.id), Errors: map[string]string{}}
		for k, v := range errs {
			e.Errors[k] = strings.Join(v, ", ")
		}
		return wrapDie(fail, e)
	}
	return nil
}

// createHARule is Rules.pm's create_rule. The new rule's order is
// get_next_ordinal's: the lowest order plus one.
func createHARule(c *call) (any, *apiError) {
	if err := c.validateRule(c.p["type"], false); err != nil {
		return nil, err
	}
	const fail = "create ha rule failed"
	h := c.s.ha()
	id := c.p["rule"]
	if _, ok := h.rules[id]; ok {
		return nil, die("%s: HA rule '%s' already defined", fail, id)
	}
	r := &haRule{id: id, typ: c.p["type"], opts: map[string]string{}, order: 1}
	if rules := h.sortedRules(); len(rules) > 0 {
		r.order = rules[0].order + 1
	}
	c.applyRuleParams(r)
	h.rules[id] = r
	if err := c.assertRule(r, fail); err != nil {
		delete(h.rules, id)
		return nil, err
	}
	h.renumber()
	return nil, nil
}

// updateHARule is Rules.pm's update_rule: the digest, the rule, its new
// and deleted properties (SectionConfig's delete_from_config), the checks.
func updateHARule(c *call) (any, *apiError) {
	const fail = "update HA rules failed"
	h := c.s.ha()
	if d := c.p["digest"]; d != "" && d != h.rulesDigest() {
		return nil, die("%s: detected modified configuration - file changed by other user? Try again.", fail)
	}
	old, ok := h.rules[c.p["rule"]]
	if !ok {
		return nil, die("%s: HA rule '%s' does not exist", fail, c.p["rule"])
	}
	if err := c.validateRule(old.typ, true); err != nil {
		return nil, err
	}
	r := &haRule{id: old.id, typ: old.typ, resources: old.resources, nodes: old.nodes, opts: map[string]string{}, order: old.order}
	for k, v := range old.opts {
		r.opts[k] = v
	}
	for _, k := range pveacl.SplitList(c.p["delete"]) {
		switch k {
		case "comment", "disable", "strict":
			if k == "strict" && r.typ != "node-affinity" {
				return nil, die("%s: no such option '%s'", fail, k)
			}
			delete(r.opts, k)
		case "resources", "nodes", "affinity":
			return nil, die("%s: unable to delete required option '%s'", fail, k)
		default:
			return nil, die("%s: no such option '%s'", fail, k)
		}
	}
	c.applyRuleParams(r)
	h.rules[r.id] = r
	if err := c.assertRule(r, fail); err != nil {
		h.rules[r.id] = old
		return nil, err
	}
	return nil, nil
}

func deleteHARule(c *call) (any, *apiError) {
	h := c.s.ha()
	delete(h.rules, c.p["rule"])
	h.renumber()
	return nil, nil
}

// renumber is write_config and the next parse_config: the rules sorted by
// order (the fake breaks ties by name, where PVE's order follows its hash
// order), then numbered from 1.
func (h *haState) renumber() {
	rules := h.sortedRules()
	for i, r := range rules {
		r.order = i + 1
	}
}
