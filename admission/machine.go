package admission

import (
	"strconv"
	"strings"

	"github.com/samber/lo"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/pvesdn/vnetid"
)

// Messages of proxmox-network-machine-binding. The composed messages extend
// these with the networks allowed and the NICs found.
const (
	msgNeedsDefault = "this namespace owns Proxmox networks, so a machine must declare network.default; " +
		"without it the VM keeps the template's NIC, which may sit on an infrastructure bridge"
	msgZoneBridge    = "a NIC on a Proxmox network zone bridge must use a Proxmox network of this namespace"
	msgUplinkVLAN    = "a NIC outside the Proxmox network zone bridges may not use a zone uplink VLAN"
	msgUplinkBridge  = "a NIC may not use a bridge that enslaves the parent device of a Proxmox network zone uplink"
	msgEveryNIC      = "every NIC must use a Proxmox network of this namespace"
	msgVNetTagged    = "a NIC on a Proxmox network zone VNet may not carry a VLAN tag: the VNet tags its frames itself, so the tag would double-tag them"
	msgZoneVNet      = "a NIC on a Proxmox network zone VNet must use a Proxmox network of this namespace"
	kindInClusterIPP = "InClusterIPPool"

	// msgNICValues is the static message of the first rule; the composed
	// ones name the NIC's field: <field>.bridge is "<bridge>", msgBadBridge,
	// or <field>.vlan is <vlan>, msgBadVLAN.
	msgNICValues = "every NIC's bridge must be " + capmox.BridgeName + ", with the VLAN in vlan, a VLAN ID from 1 to 4094"
	msgBadBridge = "which is not " + capmox.BridgeName +
		": capmox writes it into the VM's net0 as it is, so a comma would start a setting of its own; put the VLAN in vlan"
	msgBadVLAN = "which is not a VLAN ID (1 to 4094); leave vlan out for an untagged NIC"
)

// nic is a machine NIC of either capmox API version: v1alpha1's
// network.default and network.additionalDevices[] (one ipv4PoolRef), or
// v1alpha2's network.networkDevices[] (an ipPoolRef list).
type nic struct {
	// field is where the NIC sits in the object, such as
	// spec.network.networkDevices[1].
	field     string
	bridge    string
	hasBridge bool
	vlan      int64
	hasVLAN   bool
	pools     []pool
}

type pool struct {
	kind, name       string
	hasKind, hasName bool
}

// pool1 is the name of the NIC's one InClusterIPPool, and whether it has
// exactly one. A NIC with two pools (dual stack) names no Proxmox network:
// those are IPv4 only.
func (n nic) pool1() (string, bool) {
	if len(n.pools) != 1 {
		return "", false
	}
	p := n.pools[0]
	if !p.hasKind || p.kind != kindInClusterIPP || !p.hasName {
		return "", false
	}
	return p.name, true
}

// entry is the NIC's Proxmox network as the namespace annotation lists it:
// <bridge>/<vlan>/<pool> for a tagged NIC, <vnet>/<pool> for an untagged
// one on a zone VNet (onVNet), when it names exactly one InClusterIPPool;
// else "".
func (n nic) entry(onVNet bool) string {
	name, ok := n.pool1()
	switch {
	case !ok || !n.hasBridge:
		return ""
	case n.hasVLAN:
		return n.bridge + "/" + strconv.FormatInt(n.vlan, 10) + "/" + name
	case onVNet:
		return n.bridge + "/" + name
	}
	return ""
}

func decodeNIC(o object, field string) (nic, error) {
	n := nic{field: field}
	var err error
	if n.bridge, n.hasBridge, err = o.str("bridge"); err != nil {
		return nic{}, err
	}
	if n.vlan, n.hasVLAN, err = o.integer("vlan"); err != nil {
		return nic{}, err
	}
	refs, err := o.list("ipPoolRef")
	if err != nil {
		return nic{}, err
	}
	if o.has("ipv4PoolRef") {
		ref, err := o.obj("ipv4PoolRef")
		if err != nil {
			return nic{}, err
		}
		refs = append([]object{ref}, refs...)
	}
	for _, r := range refs {
		var p pool
		if p.kind, p.hasKind, err = r.str("kind"); err != nil {
			return nic{}, err
		}
		if p.name, p.hasName, err = r.str("name"); err != nil {
			return nic{}, err
		}
		n.pools = append(n.pools, p)
	}
	return n, nil
}

// machineNICs returns the NICs of a machine or template and whether it
// declares its first NIC (network.default, or a networkDevices entry named
// net0, the default name).
func machineNICs(kind string, obj object) ([]nic, bool, error) {
	spec, err := obj.obj("spec")
	if err != nil {
		return nil, false, err
	}
	if kind == KindTemplate {
		if spec, err = spec.obj("template", "spec"); err != nil {
			return nil, false, err
		}
	}
	network, err := spec.obj("network")
	if err != nil {
		return nil, false, err
	}
	base := "spec.network"
	if kind == KindTemplate {
		base = "spec.template.spec.network"
	}
	var raw []object
	var fields []string
	declared := network.has("default")
	if declared {
		d, err := network.obj("default")
		if err != nil {
			return nil, false, err
		}
		raw, fields = append(raw, d), append(fields, base+".default")
	}
	for _, key := range []string{"additionalDevices", "networkDevices"} {
		l, err := network.list(key)
		if err != nil {
			return nil, false, err
		}
		for i := range l {
			fields = append(fields, base+"."+key+"["+strconv.Itoa(i)+"]")
		}
		raw = append(raw, l...)
	}
	devices, _ := network.list("networkDevices")
	for _, d := range devices {
		if name, ok, _ := d.str("name"); !ok || name == "net0" {
			declared = true
		}
	}
	nics := make([]nic, 0, len(raw))
	for i, r := range raw {
		n, err := decodeNIC(r, fields[i])
		if err != nil {
			return nil, false, err
		}
		nics = append(nics, n)
	}
	return nics, declared, nil
}

// machineBinding applies the rules of proxmox-network-machine-binding in
// order; the first one broken decides.
func (v *Validator) machineBinding(req Request, ns *Namespace) (Decision, error) {
	obj, _, err := decodePair(req)
	if err != nil {
		return Decision{}, err
	}
	nics, declared, err := machineNICs(req.Kind.Kind, obj)
	if err != nil {
		return Decision{}, err
	}
	if d, bad := nicValuesRule(nics); bad {
		return d, nil
	}
	annotation, owns := nsAnnotation(ns, AnnotationProxmoxNetworks)
	var allowed []string
	if owns {
		allowed = strings.Split(annotation, ",")
	}
	if owns && !declared {
		return deny(PolicyMachineBinding, "", msgNeedsDefault), nil
	}
	for _, rule := range []func([]nic, bool, []string) (Decision, bool){v.zoneBridgeRule, v.vnetTagRule, v.zoneVNetRule} {
		if d, bad := rule(nics, owns, allowed); bad {
			return d, nil
		}
	}
	if d, bad := v.uplinkVLANRule(nics); bad {
		return d, nil
	}
	if d, bad := v.uplinkBridgeRule(nics); bad {
		return d, nil
	}
	if owns {
		for _, n := range nics {
			if t := v.entry(n); t == "" || !contains(allowed, t) {
				return deny(PolicyMachineBinding, msgEveryNIC+" (bridge/vlan/pool one of "+strings.Join(allowed, ", ")+")", msgEveryNIC), nil
			}
		}
	}
	return allow(), nil
}

// nicValuesRule: every NIC's bridge is a Linux bridge name and its VLAN a
// VLAN ID (capmox.ValidBridge, capmox.ValidVLAN), in every namespace. capmox
// writes the bridge into the VM's net0 unescaped, so a bridge such as
// vmbr70,tag=102 would carry a tag past every rule that reads vlan. The
// first NIC with either wrong is named, its bridge before its VLAN.
func nicValuesRule(nics []nic) (Decision, bool) {
	for _, n := range nics {
		switch {
		case n.hasBridge && !capmox.ValidBridge(n.bridge):
			return deny(PolicyMachineBinding, n.field+`.bridge is "`+n.bridge+`", `+msgBadBridge, msgNICValues), true
		case n.hasVLAN && !capmox.ValidVLAN(n.vlan):
			return deny(PolicyMachineBinding, n.field+".vlan is "+strconv.FormatInt(n.vlan, 10)+", "+msgBadVLAN, msgNICValues), true
		}
	}
	return Decision{}, false
}

func (v *Validator) onZoneBridge(n nic) bool { return n.hasBridge && v.zoneBridges[n.bridge] }

// onZoneVNet: the NIC's bridge is a VNet of a zone in mode VNets.
func (v *Validator) onZoneVNet(n nic) bool {
	return n.hasBridge && lo.SomeBy(v.cfg.vnetPrefixes(), func(p string) bool { return vnetid.Match(p, n.bridge) })
}

func (v *Validator) entry(n nic) string { return n.entry(v.onZoneVNet(n)) }

// entries lists the NICs' Proxmox networks, for the messages.
func (v *Validator) entries(nics []nic) string {
	return strings.Join(lo.Compact(lo.Map(nics, func(n nic, _ int) string { return v.entry(n) })), ", ")
}

// ownedBy composes "(<allowed>)" or "(it has none)".
func ownedBy(owns bool, allowed []string) string {
	if owns {
		return "(" + strings.Join(allowed, ", ") + ")"
	}
	return "(it has none)"
}

func (v *Validator) zoneBridgeRule(nics []nic, owns bool, allowed []string) (Decision, bool) {
	for _, n := range nics {
		if t := v.entry(n); v.onZoneBridge(n) && (t == "" || !contains(allowed, t)) {
			return deny(PolicyMachineBinding, msgZoneBridge+" "+ownedBy(owns, allowed)+"; got "+v.entries(nics), msgZoneBridge), true
		}
	}
	return Decision{}, false
}

// vnetTagRule: a NIC on a zone VNet carries no VLAN tag; the VNet tags.
func (v *Validator) vnetTagRule(nics []nic, _ bool, _ []string) (Decision, bool) {
	var got []string
	for _, n := range nics {
		if v.onZoneVNet(n) && n.hasVLAN {
			got = append(got, n.bridge+"/"+strconv.FormatInt(n.vlan, 10))
		}
	}
	if len(got) == 0 {
		return Decision{}, false
	}
	return deny(PolicyMachineBinding, msgVNetTagged+"; got "+strings.Join(got, ", "), msgVNetTagged), true
}

// zoneVNetRule: a NIC on a zone VNet is a <vnet>/<pool> of the namespace;
// a namespace without networks uses no zone VNet at all.
func (v *Validator) zoneVNetRule(nics []nic, owns bool, allowed []string) (Decision, bool) {
	for _, n := range nics {
		if t := v.entry(n); v.onZoneVNet(n) && (t == "" || !contains(allowed, t)) {
			return deny(PolicyMachineBinding, msgZoneVNet+" "+ownedBy(owns, allowed)+"; got "+v.entries(nics), msgZoneVNet), true
		}
	}
	return Decision{}, false
}

func (v *Validator) uplinkVLANRule(nics []nic) (Decision, bool) {
	var got []string
	for _, n := range nics {
		if !v.onZoneBridge(n) && n.hasVLAN && v.uplinkVLANs[n.vlan] {
			got = append(got, n.bridge+"/"+strconv.FormatInt(n.vlan, 10))
		}
	}
	if len(got) == 0 {
		return Decision{}, false
	}
	var ids []string
	for _, id := range v.cfg.uplinkVLANs() {
		ids = append(ids, strconv.Itoa(id))
	}
	msg := msgUplinkVLAN + " (" + strings.Join(ids, ", ") + "), which would put it on the zone trunk; got " + strings.Join(got, ", ")
	return deny(PolicyMachineBinding, msg, msgUplinkVLAN), true
}

func (v *Validator) uplinkBridgeRule(nics []nic) (Decision, bool) {
	var got []string
	for _, n := range nics {
		if n.hasBridge && v.uplinkBridges[n.bridge] {
			s := n.bridge
			if n.hasVLAN {
				s += "/" + strconv.FormatInt(n.vlan, 10)
			}
			got = append(got, s)
		}
	}
	if len(got) == 0 {
		return Decision{}, false
	}
	msg := "a NIC may not use " + strings.Join(v.cfg.uplinkBridges(), ", ") +
		": these bridges enslave the parent device of a Proxmox network zone uplink, so a machine on them reaches the zone trunk; got " +
		strings.Join(got, ", ")
	return deny(PolicyMachineBinding, msg, msgUplinkBridge), true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
