package pvefake

import (
	"crypto/sha1" //nolint:gosec // PVE's section-config digest is SHA-1
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// The SDN endpoints follow pve-network (github.com/proxmox/pve-network at
// ecf98c5d8f12fac9d61f3da27376aaab0ab598dc): src/PVE/API2/Network/SDN.pm,
// SDN/Zones.pm and SDN/Vnets.pm for the methods and their permissions,
// src/PVE/Network/SDN.pm for the lock and the pending configuration,
// src/PVE/Network/SDN/VnetPlugin.pm and Zones/{Plugin,VlanPlugin,
// QinQPlugin,SimplePlugin}.pm for the validation.

// sdnIDRe is pve-sdn-zone-id and pve-sdn-vnet-id: 2 to 8 characters,
// alphanumeric, starting with a letter (JSONSchema anchors patterns).
var sdnIDRe = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]*[a-zA-Z0-9]$`)

func sdnID(name string) param {
	return param{name: name, pattern: sdnIDRe, minLen: 2, maxLen: 8}
}

// sdnPerlLockLine is where lock_sdn_config dies on a wrong token (a die
// without a newline carries Perl's location).
const sdnPerlLockLine = "at /usr/share/perl5/PVE/Network/SDN.pm line 291."

// zoneTypes is Zones::Plugin->lookup_types.
var zoneTypes = []string{"evpn", "faucet", "qinq", "simple", "vlan", "vxlan"}

// zoneOptions are the options each implemented zone type takes (the
// plugins' options(); false: optional).
var zoneOptions = map[string]map[string]bool{
	"vlan": {"nodes": false, "bridge": true, "bridge-disable-mac-learning": false, "mtu": false, "dns": false,
		"reversedns": false, "dnszone": false, "ipam": false},
	"qinq": {"nodes": false, "tag": true, "bridge": true, "bridge-disable-mac-learning": false, "mtu": false,
		"vlan-protocol": false, "dns": false, "reversedns": false, "dnszone": false, "ipam": false},
	"simple": {"nodes": false, "mtu": false, "dns": false, "reversedns": false, "dnszone": false, "ipam": false,
		"dhcp": false},
}

// vnetOptions is VnetPlugin->options.
var vnetOptions = map[string]bool{"zone": true, "tag": false, "alias": false, "vlanaware": false, "isolate-ports": false}

var (
	vnetTagMax   = 16777215
	one          = 1
	aliasRe      = regexp.MustCompile(`^[\(\)-_.\w\d\s]{0,256}$`)
	configIDList = regexp.MustCompile(`^[a-z][a-z0-9_-]+(?:[,; ]+[a-z][a-z0-9_-]+)*$`)
)

func fmtNodeList(v string) error {
	for _, n := range pveacl.SplitList(v) {
		if err := fmtNode(n); err != nil {
			return err
		}
	}
	return nil
}

// zoneProps are the zone properties the fake knows (the union of the
// implemented plugins' properties).
func zoneProps() []param {
	return []param{
		{name: "nodes", optional: true, format: fmtNodeList},
		opt("bridge", tString), opt("bridge-disable-mac-learning", tBool), opt("mtu", tInt),
		{name: "tag", typ: tInt, optional: true, min: &zero},
		{name: "vlan-protocol", optional: true, enum: []string{"802.1q", "802.1ad"}},
		opt("dns", tString), opt("reversedns", tString), opt("dnszone", tString), opt("ipam", tString),
		{name: "dhcp", optional: true, enum: []string{"dnsmasq"}},
	}
}

func vnetProps() []param {
	return []param{
		{name: "tag", typ: tInt, optional: true, min: &one, max: &vnetTagMax},
		opt("vlanaware", tBool), opt("isolate-ports", tBool),
		{name: "alias", optional: true, pattern: aliasRe, maxLen: 256},
	}
}

// lockParams are the SDN lock parameters, which exist from PVE 9.
func lockParams(c config, releaseLock bool) []param {
	if c.version < pveacl.PVE9 {
		return nil
	}
	out := []param{opt("lock-token", tString)}
	if releaseLock {
		out = append(out, opt("release-lock", tBool))
	}
	return out
}

func sdnConfigRoutes(c config) []*route {
	zone, vnet := sdnID("zone"), sdnID("vnet")
	view := []param{opt("running", tBool), opt("pending", tBool)}
	update := []param{{name: "delete", optional: true, pattern: configIDList}, {name: "digest", optional: true, maxLen: 64}}
	zoneCreate := append(append([]param{zone, {name: "type", enum: zoneTypes}}, zoneProps()...), lockParams(c, false)...)
	zoneUpdate := append(append(append([]param{zone}, zoneProps()...), update...), lockParams(c, false)...)
	vnetCreate := append(append([]param{vnet, req("zone", tString), {name: "type", optional: true, enum: []string{"vnet"}}},
		vnetProps()...), lockParams(c, false)...)
	vnetUpdate := append(append(append([]param{vnet, opt("zone", tString)}, vnetProps()...), update...), lockParams(c, false)...)
	allocate := func(path string) check { return perm{path: path, privs: []string{"SDN.Allocate"}} }
	return []*route{
		{method: "GET", path: "/cluster/sdn/zones", handle: listZones,
			schema: append([]param{{name: "type", optional: true, enum: zoneTypes}}, view...)},
		{method: "GET", path: "/cluster/sdn/zones/{zone}", schema: append([]param{zone}, view...),
			check: allocate("/sdn/zones/{zone}"), handle: readZone},
		{method: "POST", path: "/cluster/sdn/zones", schema: zoneCreate, check: allocate("/sdn/zones"), handle: createZone},
		{method: "PUT", path: "/cluster/sdn/zones/{zone}", schema: zoneUpdate, check: allocate("/sdn/zones/{zone}"), handle: updateZone},
		{method: "DELETE", path: "/cluster/sdn/zones/{zone}", schema: append([]param{zone}, lockParams(c, false)...),
			check: allocate("/sdn/zones/{zone}"), handle: deleteZone},
		{method: "GET", path: "/cluster/sdn/vnets", schema: view, handle: listVNets},
		{method: "GET", path: "/cluster/sdn/vnets/{vnet}", schema: append([]param{vnet}, view...), handle: readVNet},
		{method: "POST", path: "/cluster/sdn/vnets", schema: vnetCreate, check: allocate("/sdn/zones/{zone}"), handle: createVNet},
		{method: "PUT", path: "/cluster/sdn/vnets/{vnet}", schema: vnetUpdate, handle: updateVNet},
		{method: "DELETE", path: "/cluster/sdn/vnets/{vnet}", schema: append([]param{vnet}, lockParams(c, false)...), handle: deleteVNet},
	}
}

// digest is the SHA-1 of a configuration file, as SectionConfig reports it.
func digest(sections map[string]sdnSection) string {
	h := sha1.New() //nolint:gosec // PVE's digest
	for _, id := range sortedKeys(sections) {
		s := sections[id]
		fmt.Fprintf(h, "%s: %s\n", s["type"], id)
		for _, k := range sortedKeys(s) {
			if k != "type" {
				fmt.Fprintf(h, "\t%s %s\n", k, s[k])
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sdnView picks the configuration a read shows: pending (running values
// with the pending changes under "pending" and a state), running, or the
// configuration files.
func (c *call) sdnView(kind string) map[string]map[string]any {
	n := c.s.sdn()
	pick := func(cfg sdnConfig) map[string]sdnSection {
		if kind == "zones" {
			return cfg.zones
		}
		return cfg.vnets
	}
	switch {
	case c.p.flag("pending", false):
		return pendingConfig(pick(n.runningOrEmpty()), pick(n.pending))
	case c.p.flag("running", false):
		return plainView(pick(n.runningOrEmpty()))
	}
	return plainView(pick(n.pending))
}

func plainView(sections map[string]sdnSection) map[string]map[string]any {
	d := digest(sections)
	out := map[string]map[string]any{}
	for id, s := range sections {
		e := map[string]any{"digest": d}
		for k, v := range s {
			e[k] = sdnValue(k, v)
		}
		out[id] = e
	}
	return out
}

// numericKeys are the SDN options of integer or boolean type, which
// SectionConfig's check_value turns into numbers.
var numericKeys = map[string]bool{"mtu": true, "tag": true, "bridge-disable-mac-learning": true, "vlanaware": true,
	"isolate-ports": true}

func sdnValue(k, v string) any {
	if numericKeys[k] {
		return atoi(v)
	}
	return v
}

// pendingConfig is PVE::Network::SDN::pending_config.
func pendingConfig(running, cfg map[string]sdnSection) map[string]map[string]any {
	out := map[string]map[string]any{}
	get := func(id string) map[string]any {
		if out[id] == nil {
			out[id] = map[string]any{}
		}
		return out[id]
	}
	pend := func(id string) map[string]any {
		e := get(id)
		if e["pending"] == nil {
			e["pending"] = map[string]any{}
		}
		return e["pending"].(map[string]any)
	}
	for id, r := range running {
		conf := cfg[id]
		for k, v := range r {
			get(id)[k] = sdnValue(k, v)
			switch cv, ok := conf[k]; {
			case len(conf) == 0:
				get(id)["state"] = "deleted"
			case !ok:
				pend(id)[k] = "deleted"
				get(id)["state"] = "changed"
			case cv != v:
				get(id)["state"] = "changed"
			}
		}
		if get(id)["state"] != nil {
			pend(id)
		}
	}
	for id, conf := range cfg {
		r := running[id]
		for k, v := range conf {
			rv, ok := r[k]
			if k == "type" || k == "vnet" {
				get(id)[k] = v
			} else if !ok || rv != v {
				pend(id)[k] = sdnValue(k, v)
			}
			if len(r) == 0 {
				get(id)["state"] = "new"
			} else if !ok {
				get(id)["state"] = "changed"
			}
		}
		if get(id)["state"] != nil {
			pend(id)
		}
	}
	return out
}

func listZones(c *call) (any, *apiError) {
	view := c.sdnView("zones")
	out := []map[string]any{}
	for _, id := range sortedKeys(view) {
		e := view[id]
		if t := c.p["type"]; t != "" && e["type"] != t {
			continue
		}
		if ok, _ := c.checkAny("/sdn/zones/"+id, []string{"SDN.Audit", "SDN.Allocate"}, true); !ok {
			continue
		}
		e["zone"] = id
		out = append(out, e)
	}
	return out, nil
}

func readZone(c *call) (any, *apiError) {
	id := c.p["zone"]
	e, ok := c.sdnView("zones")[id]
	if !ok {
		return nil, die("sdn '%s' does not exist", id)
	}
	e["zone"] = id
	return e, nil
}

// sdnLocked is lock_sdn_config: the code runs when no global lock is held
// or the caller's token matches it; errors are prefixed with errmsg as
// lock_sdn_domain does (pve-cluster's cfs_lock re-raises the code's errors
// unchanged).
func (c *call) sdnLocked(errmsg string, code func() *apiError) *apiError {
	n := c.s.sdn()
	token, given := c.p["lock-token"]
	if n.lock != "" && (!given || token != n.lock) {
		return die("%s: invalid lock token provided! %s", errmsg, sdnPerlLockLine)
	}
	return wrapDie(errmsg, code())
}

// sectionOptions is SectionConfig::check_config: every given option must
// be one of the type's, and on create every required one must be given.
// Keys are checked in order (Perl's hash order is random).
func sectionOptions(p params, options map[string]bool, skip []string, create bool) (sdnSection, *apiError) {
	out := sdnSection{}
	for _, k := range sortedKeys(p) {
		if containsStr(skip, k) {
			continue
		}
		if _, ok := options[k]; !ok {
			return nil, die("unexpected property '%s'", k)
		}
		if strings.ContainsAny(p[k], "\r\n") {
			return nil, die("property contains a line feed")
		}
		out[k] = p[k]
	}
	if create {
		for _, k := range sortedKeys(options) {
			if _, ok := out[k]; options[k] && !ok {
				return nil, die("missing value for required option '%s'", k)
			}
		}
	}
	return out, nil
}

// zonePlugin is Zones::Plugin->lookup for the types the fake implements.
func zonePlugin(typ string) (map[string]bool, *apiError) {
	opts, ok := zoneOptions[typ]
	if !ok && containsStr(zoneTypes, typ) {
		return nil, die("zone type '%s' is not implemented by the Proxmox VE API fake (simple, vlan and qinq are)", typ)
	}
	if !ok {
		return nil, die("unknown section type '%s'", typ)
	}
	return opts, nil
}

var zoneSkip = []string{"zone", "type", "lock-token", "digest", "delete"}

func createZone(c *call) (any, *apiError) {
	id, typ := c.p["zone"], c.p["type"]
	opts, err := zonePlugin(typ)
	if err != nil {
		return nil, err
	}
	sec, err := sectionOptions(c.p, opts, zoneSkip, true)
	if err != nil {
		return nil, err
	}
	sec["type"] = typ
	return nil, c.sdnLocked("create sdn zone object failed", func() *apiError {
		n := c.s.sdn()
		if _, ok := n.pending.zones[id]; ok {
			return die("sdn zone object ID '%s' already defined", id)
		}
		if err := n.zoneRefs(sec); err != nil {
			return err
		}
		n.pending.zones[id] = sec
		return nil
	})
}

// zoneRefs checks the zone's DNS and IPAM references (the fake has no DNS
// plugins and the default IPAM "pve").
func (n *sdnState) zoneRefs(sec sdnSection) *apiError {
	if d := sec["dns"]; d != "" {
		return paramErr("dns", "%s don't exist", d)
	}
	if d := sec["reversedns"]; d != "" {
		return paramErr("reversedns", "%s don't exist", d)
	}
	if sec["dnszone"] != "" {
		return paramErr("dnszone", "missing dns server")
	}
	if i := sec["ipam"]; i != "" && !n.ipams[i] {
		return paramErr("ipam", "%s not existing", i)
	}
	return nil
}

// deleteOptions is SectionConfig::delete_from_config.
func deleteOptions(sec sdnSection, options map[string]bool, set sdnSection, list string) *apiError {
	for _, k := range pveacl.SplitList(list) {
		required, ok := options[k]
		switch {
		case !ok:
			return die("no such option '%s'", k)
		case required:
			return die("unable to delete required option '%s'", k)
		case set[k] != "":
			return die("cannot set and delete property '%s' at the same time!", k)
		}
		delete(sec, k)
	}
	return nil
}

func updateZone(c *call) (any, *apiError) {
	id := c.p["zone"]
	return nil, c.sdnLocked("update sdn zone object failed", func() *apiError {
		n := c.s.sdn()
		if d := c.p["digest"]; d != "" && d != digest(n.pending.zones) {
			return die("detected modified configuration - file changed by other user? Try again.")
		}
		sec, ok := n.pending.zones[id]
		if !ok {
			return die("sdn '%s' does not exist", id)
		}
		opts, err := zonePlugin(sec["type"])
		if err != nil {
			return err
		}
		set, err := sectionOptions(c.p, opts, zoneSkip, false)
		if err != nil {
			return err
		}
		next := sdnSection{}
		for k, v := range sec {
			next[k] = v
		}
		if err := deleteOptions(next, opts, set, c.p["delete"]); err != nil {
			return err
		}
		for k, v := range set {
			next[k] = v
		}
		if err := n.zoneRefs(set); err != nil {
			return err
		}
		n.pending.zones[id] = next
		return nil
	})
}

func deleteZone(c *call) (any, *apiError) {
	id := c.p["zone"]
	return nil, c.sdnLocked("delete sdn zone object failed", func() *apiError {
		n := c.s.sdn()
		if _, ok := n.pending.zones[id]; !ok {
			return die("sdn '%s' does not exist", id)
		}
		for _, v := range sortedKeys(n.pending.vnets) {
			if n.pending.vnets[v]["zone"] == id {
				return die("zone %s is used by vnet %s at /usr/share/perl5/PVE/Network/SDN/Zones/Plugin.pm line 148.", id, v)
			}
		}
		delete(n.pending.zones, id)
		return nil
	})
}

func listVNets(c *call) (any, *apiError) {
	view := c.sdnView("vnets")
	out := []map[string]any{}
	for _, id := range sortedKeys(view) {
		e := view[id]
		zone, _ := e["zone"].(string)
		if zone == "" {
			if p, ok := e["pending"].(map[string]any); ok {
				zone, _ = p["zone"].(string)
			}
		}
		if ok, _ := c.checkAny("/sdn/zones/"+zone+"/"+id, []string{"SDN.Audit", "SDN.Allocate"}, true); !ok {
			continue
		}
		e["vnet"] = id
		out = append(out, e)
	}
	return out, nil
}

// checkVNetAccess is Vnets.pm's $check_vnet_access: the VNet must exist in
// the configuration files, and the caller needs one of privs on
// /sdn/zones/<zone>/<vnet>.
func (c *call) checkVNetAccess(id string, privs ...string) *apiError {
	v, ok := c.s.sdn().pending.vnets[id]
	if !ok {
		return die("sdn vnet '%s' does not exist", id)
	}
	_, err := c.checkAny("/sdn/zones/"+v["zone"]+"/"+id, privs, false)
	return err
}

func readVNet(c *call) (any, *apiError) {
	id := c.p["vnet"]
	if err := c.checkVNetAccess(id, "SDN.Audit", "SDN.Allocate"); err != nil {
		return nil, err
	}
	e, ok := c.sdnView("vnets")[id]
	if !ok {
		return nil, die("sdn vnet '%s' does not exist", id)
	}
	e["vnet"] = id
	return e, nil
}

var vnetSkip = []string{"vnet", "type", "lock-token", "digest", "delete"}

func createVNet(c *call) (any, *apiError) {
	id := c.p["vnet"]
	return nil, c.sdnLocked("create sdn vnet object failed", func() *apiError {
		n := c.s.sdn()
		sec, err := sectionOptions(c.p, vnetOptions, vnetSkip, true)
		if err != nil {
			return err
		}
		sec["type"] = "vnet"
		if _, ok := n.pending.vnets[id]; ok {
			return die("sdn vnet object ID '%s' already defined", id)
		}
		return n.putVNet(c.s, id, sec)
	})
}

// putVNet runs the zone plugin's vnet_update_hook and stores the VNet.
func (n *sdnState) putVNet(s *state, id string, sec sdnSection) *apiError {
	z, ok := n.pending.zones[sec["zone"]]
	if !ok {
		return die("unknown section type ''")
	}
	if err := n.vnetHook(s, z, id, sec); err != nil {
		return err
	}
	n.pending.vnets[id] = sec
	return nil
}

// vnetHook is the zone plugins' vnet_update_hook.
func (n *sdnState) vnetHook(s *state, z sdnSection, id string, sec sdnSection) *apiError {
	tag := sec["tag"]
	others := []string{}
	for _, o := range sortedKeys(n.pending.vnets) {
		if o != id && n.pending.vnets[o]["zone"] == sec["zone"] {
			others = append(others, o)
		}
	}
	switch z["type"] {
	case "simple":
		if tag != "" {
			return paramErr("tag", "vlan tag is not allowed on simple zone")
		}
		if sec["mac"] == "" {
			s.macSeq++
			sec["mac"] = fmt.Sprintf("BC:24:11:%02X:%02X:%02X", 0xa0, s.macSeq>>8&0xff, s.macSeq&0xff)
		}
	case "vlan":
		return n.vlanHook(others, tag)
	case "qinq":
		return n.qinqHook(others, tag, sec["zone"])
	}
	return nil
}

func (n *sdnState) vlanHook(others []string, tag string) *apiError {
	if tag == "" {
		return paramErr("tag", "missing vlan tag")
	}
	if atoi(tag) > 4096 {
		return paramErr("tag", "vlan tag max value is 4096")
	}
	for _, o := range others {
		if ot := n.pending.vnets[o]["tag"]; ot != "" && ot == tag {
			return paramErr("tag", "tag %s already exist in vnet %s", tag, o)
		}
	}
	return nil
}

func (n *sdnState) qinqHook(others []string, tag, zone string) *apiError {
	if tag != "" && atoi(tag) > 4096 {
		return paramErr("tag", "VLAN tag maximal value is 4096")
	}
	for _, o := range others {
		ot := n.pending.vnets[o]["tag"]
		if tag != "" && ot != "" && ot == tag {
			return paramErr("tag", "tag %s already exist in zone %s vnet %s", tag, zone, o)
		}
		if tag == "" && ot == "" {
			return paramErr("tag", "tag-less vnet already exists in zone %s vnet %s", zone, o)
		}
	}
	return nil
}

func atoi(v string) int {
	var n int
	_, _ = fmt.Sscan(strings.TrimSpace(v), &n)
	return n
}

func updateVNet(c *call) (any, *apiError) {
	id := c.p["vnet"]
	if err := c.checkVNetAccess(id, "SDN.Allocate"); err != nil {
		return nil, err
	}
	return nil, c.sdnLocked("update sdn vnet object failed", func() *apiError {
		n := c.s.sdn()
		if d := c.p["digest"]; d != "" && d != digest(n.pending.vnets) {
			return die("detected modified configuration - file changed by other user? Try again.")
		}
		set, err := sectionOptions(c.p, vnetOptions, vnetSkip, false)
		if err != nil {
			return err
		}
		next := sdnSection{}
		for k, v := range n.pending.vnets[id] {
			next[k] = v
		}
		if err := deleteOptions(next, vnetOptions, set, c.p["delete"]); err != nil {
			return err
		}
		for k, v := range set {
			next[k] = v
		}
		return n.putVNet(c.s, id, next)
	})
}

func deleteVNet(c *call) (any, *apiError) {
	id := c.p["vnet"]
	if err := c.checkVNetAccess(id, "SDN.Allocate"); err != nil {
		return nil, err
	}
	return nil, c.sdnLocked("delete sdn vnet object failed", func() *apiError {
		delete(c.s.sdn().pending.vnets, id)
		return nil
	})
}

// vnetsOf returns the VNets of a configuration sorted by ID.
func vnetsOf(cfg sdnConfig) []string {
	ids := sortedKeys(cfg.vnets)
	sort.Strings(ids)
	return ids
}
