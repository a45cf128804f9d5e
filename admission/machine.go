package admission

import (
	"strconv"
	"strings"
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
	kindInClusterIPP = "InClusterIPPool"
)

// nic is a machine NIC of either capmox API version: v1alpha1's
// network.default and network.additionalDevices[] (one ipv4PoolRef), or
// v1alpha2's network.networkDevices[] (an ipPoolRef list).
type nic struct {
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

// triple is the NIC's <bridge>/<vlan>/<pool> when it names exactly one
// InClusterIPPool, else "". A NIC with two pools (dual stack) names no
// Proxmox network: those are IPv4 only.
func (n nic) triple() string {
	if !n.hasBridge || !n.hasVLAN || len(n.pools) != 1 {
		return ""
	}
	p := n.pools[0]
	if !p.hasKind || p.kind != kindInClusterIPP || !p.hasName {
		return ""
	}
	return n.bridge + "/" + strconv.FormatInt(n.vlan, 10) + "/" + p.name
}

func decodeNIC(o object) (nic, error) {
	var n nic
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
	var raw []object
	declared := network.has("default")
	if declared {
		d, err := network.obj("default")
		if err != nil {
			return nil, false, err
		}
		raw = append(raw, d)
	}
	for _, key := range []string{"additionalDevices", "networkDevices"} {
		l, err := network.list(key)
		if err != nil {
			return nil, false, err
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
	for _, r := range raw {
		n, err := decodeNIC(r)
		if err != nil {
			return nil, false, err
		}
		nics = append(nics, n)
	}
	return nics, declared, nil
}

// machineBinding applies the five rules of proxmox-network-machine-binding
// in order; the first one broken decides.
func (v *Validator) machineBinding(req Request, ns *Namespace) (Decision, error) {
	obj, _, err := decodePair(req)
	if err != nil {
		return Decision{}, err
	}
	nics, declared, err := machineNICs(req.Kind.Kind, obj)
	if err != nil {
		return Decision{}, err
	}
	annotation, owns := nsAnnotation(ns, AnnotationProxmoxNetworks)
	var allowed []string
	if owns {
		allowed = strings.Split(annotation, ",")
	}
	if owns && !declared {
		return deny(PolicyMachineBinding, "", msgNeedsDefault), nil
	}
	if d, bad := v.zoneBridgeRule(nics, owns, allowed); bad {
		return d, nil
	}
	if d, bad := v.uplinkVLANRule(nics); bad {
		return d, nil
	}
	if d, bad := v.uplinkBridgeRule(nics); bad {
		return d, nil
	}
	if owns {
		for _, n := range nics {
			if t := n.triple(); t == "" || !contains(allowed, t) {
				return deny(PolicyMachineBinding, msgEveryNIC+" (bridge/vlan/pool one of "+strings.Join(allowed, ", ")+")", msgEveryNIC), nil
			}
		}
	}
	return allow(), nil
}

func (v *Validator) onZoneBridge(n nic) bool { return n.hasBridge && v.zoneBridges[n.bridge] }

func (v *Validator) zoneBridgeRule(nics []nic, owns bool, allowed []string) (Decision, bool) {
	for _, n := range nics {
		if t := n.triple(); v.onZoneBridge(n) && (t == "" || !contains(allowed, t)) {
			have := "it has none"
			if owns {
				have = strings.Join(allowed, ", ")
			}
			var got []string
			for _, m := range nics {
				if t := m.triple(); t != "" {
					got = append(got, t)
				}
			}
			return deny(PolicyMachineBinding, msgZoneBridge+" ("+have+"); got "+strings.Join(got, ", "), msgZoneBridge), true
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
