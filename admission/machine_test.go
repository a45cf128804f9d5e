package admission

import (
	"strconv"
	"testing"
)

const (
	zoneMsgOwning = "a NIC on a Proxmox network zone bridge must use a Proxmox network of this namespace (vmbr70/101/subnet-a, vmbr1/5/subnet-c); got "
	zoneMsgNone   = "a NIC on a Proxmox network zone bridge must use a Proxmox network of this namespace (it has none); got "
	everyNICMsg   = "every NIC must use a Proxmox network of this namespace (bridge/vlan/pool one of vmbr70/101/subnet-a, vmbr1/5/subnet-c)"
	uplinkVLANMsg = "a NIC outside the Proxmox network zone bridges may not use a zone uplink VLAN (70), which would put it on the zone trunk; got "
	uplinkBrMsg   = "a NIC may not use vmbr0: these bridges enslave the parent device of a Proxmox network zone uplink, so a machine on them reaches the zone trunk; got "
	vnetMsgOwning = "a NIC on a Proxmox network zone VNet must use a Proxmox network of this namespace (pxa0101/subnet-a, vmbr70/101/subnet-a); got "
	vnetMsgNone   = "a NIC on a Proxmox network zone VNet must use a Proxmox network of this namespace (it has none); got "
	vnetTaggedMsg = "a NIC on a Proxmox network zone VNet may not carry a VLAN tag: the VNet tags its frames itself, so the tag would double-tag them; got "
)

// bridgeMsg is the refusal of the bridge of the NIC at field.
func bridgeMsg(field, bridge string) string {
	return field + `.bridge is "` + bridge + `", which is not a Linux bridge name such as vmbr0 (1 to 15 letters, digits, hyphens, underscores or dots, starting with a letter): ` +
		`capmox writes it into the VM's net0 as it is, so a comma would start a setting of its own; put the VLAN in vlan`
}

// vlanMsg is the refusal of the VLAN of the NIC at field.
func vlanMsg(field string, vlan int) string {
	return field + ".vlan is " + strconv.Itoa(vlan) + ", which is not a VLAN ID (1 to 4094); leave vlan out for an untagged NIC"
}

// withVLAN sets a NIC's vlan, 0 included (nicV1 and nicV2 leave 0 out).
func withVLAN(n m, vlan int) m {
	n["vlan"] = vlan
	return n
}

// nicValueCases: a NIC's bridge is a Linux bridge name and its VLAN a VLAN
// ID, in every namespace, before any other rule; the controls are admitted
// by the rules that follow.
func nicValueCases() map[string]pairCase {
	const own102 = "pxa0102/subnet-b,vmbr70/102/subnet-b"
	return map[string]pairCase{
		"MachineBridgeCarriesTag": {
			reason:   "net0 would read tag=102, another tenant's VLAN, in a namespace without networks; the control is that VLAN in vlan, in the namespace that owns it",
			refused:  input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr70,tag=102", 0, "subnet-b"))},
			admitted: input{kind: gvkMachineV1, ns: owns(own102), obj: machineV1(nicV1("vmbr70", 102, "subnet-b"))},
			policy:   PolicyMachineBinding, message: bridgeMsg("spec.network.default", "vmbr70,tag=102"),
		},
		"MachineV2VNetTrailingComma": {
			reason:   "pxa0102, is not the zone's VNet pxa0102 to the VNet rules, but Proxmox reads it as one",
			refused:  input{kind: gvkMachineV2, ns: plain(), obj: machineV2(nicV2("net0", "pxa0102,", 0, "subnet-b"))},
			admitted: input{kind: gvkMachineV2, ns: owns(own102), obj: machineV2(nicV2("net0", "pxa0102", 0, "subnet-b"))},
			policy:   PolicyMachineBinding, message: bridgeMsg("spec.network.networkDevices[0]", "pxa0102,"),
		},
		"TemplateAdditionalBridgeCarriesTag": {
			reason:   "an additional device of a v1alpha1 template counts, in a namespace that owns networks",
			refused:  input{kind: gvkTemplateV1, ns: owns(own102), obj: template(machineV1(nicV1("vmbr70", 102, "subnet-b"), nicV1("vmbr70,tag=102", 0, "subnet-b")))},
			admitted: input{kind: gvkTemplateV1, ns: owns(own102), obj: template(machineV1(nicV1("vmbr70", 102, "subnet-b"), nicV1("vmbr70", 102, "subnet-b")))},
			policy:   PolicyMachineBinding, message: bridgeMsg("spec.template.spec.network.additionalDevices[0]", "vmbr70,tag=102"),
		},
		"TemplateV2BridgeCarriesTag": {
			reason:   "a v1alpha2 template's networkDevices",
			refused:  input{kind: gvkTemplateV2, ns: plain(), obj: template(machineV2(nicV2("net0", "vmbr70,tag=102", 0, "subnet-b")))},
			admitted: input{kind: gvkTemplateV2, ns: owns(own102), obj: template(machineV2(nicV2("net0", "vmbr70", 102, "subnet-b")))},
			policy:   PolicyMachineBinding, message: bridgeMsg("spec.template.spec.network.networkDevices[0]", "vmbr70,tag=102"),
		},
		"MachineBridgeTrailingSpace": {
			reason:   "vmbr0 with a space is not the uplink bridge to the uplink rule, nor an interface name",
			refused:  input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr0 ", 0, ""))},
			admitted: input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr9", 0, ""))},
			policy:   PolicyMachineBinding, message: bridgeMsg("spec.network.default", "vmbr0 "),
		},
		"MachineV2BridgeEquals": {
			reason:   "the second of two NICs, with an equals sign",
			refused:  input{kind: gvkMachineV2, ns: plain(), obj: machineV2(nicV2("net0", "vmbr9", 0), nicV2("net1", "vmbr0=1", 0, "p"))},
			admitted: input{kind: gvkMachineV2, ns: plain(), obj: machineV2(nicV2("net0", "vmbr9", 0), nicV2("net1", "vmbr8", 0, "p"))},
			policy:   PolicyMachineBinding, message: bridgeMsg("spec.network.networkDevices[1]", "vmbr0=1"),
		},
		"MachineBridgeEmpty": {
			reason:   "an empty bridge names no bridge",
			refused:  input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr9", 0, ""), nicV1("", 0, "p"))},
			admitted: input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr9", 0, ""), nicV1("vmbr8", 0, "p"))},
			policy:   PolicyMachineBinding, message: bridgeMsg("spec.network.additionalDevices[0]", ""),
		},
		"MachineV2BridgeTooLong": {
			reason:   "Linux names an interface in at most 15 bytes",
			refused:  input{kind: gvkMachineV2, ns: plain(), obj: machineV2(nicV2("net0", "vmbr0123456789ab", 0))},
			admitted: input{kind: gvkMachineV2, ns: plain(), obj: machineV2(nicV2("net0", "vmbr0123456789a", 0))},
			policy:   PolicyMachineBinding, message: bridgeMsg("spec.network.networkDevices[0]", "vmbr0123456789ab"),
		},
		"MachineBridgeNewline": {
			reason:   "a message that would span lines is the static one, as the API server has it",
			refused:  input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr9\n", 0, ""))},
			admitted: input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr9", 0, ""))},
			policy:   PolicyMachineBinding, message: "every NIC's bridge must be a Linux bridge name such as vmbr0 (1 to 15 letters, digits, hyphens, underscores or dots, starting with a letter), with the VLAN in vlan, a VLAN ID from 1 to 4094",
		},
		"MachineBridgeBeforeVLAN": {
			reason:   "a NIC with both wrong is refused for its bridge",
			refused:  input{kind: gvkMachineV1, ns: plain(), obj: machineV1(withVLAN(nicV1("vmbr9,tag=5", 0, ""), 4095))},
			admitted: input{kind: gvkMachineV1, ns: plain(), obj: machineV1(withVLAN(nicV1("vmbr9", 0, ""), 4094))},
			policy:   PolicyMachineBinding, message: bridgeMsg("spec.network.default", "vmbr9,tag=5"),
		},
		"MachineVLANZero": {
			reason:   "VLAN 0 tags nothing; capmox's CRD refuses it, the rule holds without that schema",
			refused:  input{kind: gvkMachineV1, ns: plain(), obj: machineV1(withVLAN(nicV1("vmbr9", 0, ""), 0))},
			admitted: input{kind: gvkMachineV1, ns: plain(), obj: machineV1(withVLAN(nicV1("vmbr9", 0, ""), 1))},
			policy:   PolicyMachineBinding, message: vlanMsg("spec.network.default", 0),
		},
		"MachineV2VLAN4095": {
			reason:   "4095 is reserved",
			refused:  input{kind: gvkMachineV2, ns: plain(), obj: machineV2(nicV2("net0", "vmbr9", 4095))},
			admitted: input{kind: gvkMachineV2, ns: plain(), obj: machineV2(nicV2("net0", "vmbr9", 4094))},
			policy:   PolicyMachineBinding, message: vlanMsg("spec.network.networkDevices[0]", 4095),
		},
		"TemplateVLANNegative": {
			reason:   "a negative VLAN of a v1alpha1 template",
			refused:  input{kind: gvkTemplateV1, ns: plain(), obj: template(machineV1(nicV1("vmbr9", -1, "")))},
			admitted: input{kind: gvkTemplateV1, ns: plain(), obj: template(machineV1(nicV1("vmbr9", 12, "")))},
			policy:   PolicyMachineBinding, message: vlanMsg("spec.template.spec.network.default", -1),
		},
		"TemplateV2VLAN4095BeforeBinding": {
			reason:   "the rule comes first: a foreign network with VLAN 4095 is refused for the VLAN",
			refused:  input{kind: gvkTemplateV2, ns: owns(own102), obj: template(machineV2(nicV2("net0", "vmbr70", 102, "subnet-b"), nicV2("net1", "vmbr70", 4095, "subnet-a")))},
			admitted: input{kind: gvkTemplateV2, ns: owns(own102), obj: template(machineV2(nicV2("net0", "vmbr70", 102, "subnet-b"), nicV2("net1", "vmbr70", 102, "subnet-b")))},
			policy:   PolicyMachineBinding, message: vlanMsg("spec.template.spec.network.networkDevices[1]", 4095),
		},
	}
}

func machineCases() map[string]pairCase {
	own := nicV1("vmbr70", 101, "subnet-a")
	cases := map[string]pairCase{
		"MachineNeedsDefault": {
			reason:   "a namespace that owns networks needs network.default, or the VM keeps the template's NIC",
			refused:  input{kind: gvkMachineV1, ns: owning(), obj: machineV1(nil, nicV1("vmbr70", 101, "subnet-a"))},
			admitted: input{kind: gvkMachineV1, ns: owning(), obj: machineV1(own)},
			policy:   PolicyMachineBinding, message: msgNeedsDefault,
		},
		"MachineV2NeedsNet0": {
			reason:   "v1alpha2: the first NIC is the networkDevices entry named net0",
			refused:  input{kind: gvkMachineV2, ns: owning(), obj: machineV2(nicV2("net1", "vmbr70", 101, "subnet-a"))},
			admitted: input{kind: gvkMachineV2, ns: owning(), obj: machineV2(nicV2("net0", "vmbr70", 101, "subnet-a"))},
			policy:   PolicyMachineBinding, message: msgNeedsDefault,
		},
		"MachineForeignNetwork": {
			reason:   "a zone bridge NIC with another namespace's VLAN and pool",
			refused:  input{kind: gvkMachineV1, ns: owning(), obj: machineV1(nicV1("vmbr70", 102, "subnet-a"))},
			admitted: input{kind: gvkMachineV1, ns: owning(), obj: machineV1(nicV1("vmbr70", 101, "subnet-a"))},
			policy:   PolicyMachineBinding, message: zoneMsgOwning + "vmbr70/102/subnet-a",
		},
		"MachineZoneBridgeWithoutNetworks": {
			reason:   "a namespace without networks cannot put a NIC on the zone bridge through the raw path",
			refused:  input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr70", 101, "subnet-a"))},
			admitted: input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr1", 101, "subnet-a"))},
			policy:   PolicyMachineBinding, message: zoneMsgNone + "vmbr70/101/subnet-a",
		},
		"MachineZoneBridgeNoNamespace": {
			reason:   "a namespace the API does not know owns nothing",
			refused:  input{kind: gvkMachineV1, obj: machineV1(nicV1("vmbr70", 101, ""))},
			admitted: input{kind: gvkMachineV1, obj: machineV1(nicV1("vmbr71", 101, ""))},
			policy:   PolicyMachineBinding, message: "a NIC on a Proxmox network zone bridge must use a Proxmox network of this namespace (it has none); got",
		},
		"MachineZoneBridgeUntagged": {
			reason:   "an untagged NIC on the trunk bridge is a trunk port",
			refused:  input{kind: gvkMachineV1, ns: owning(), obj: machineV1(nicV1("vmbr70", 0, "subnet-a"))},
			admitted: input{kind: gvkMachineV1, ns: owning(), obj: machineV1(nicV1("vmbr70", 101, "subnet-a"))},
			policy:   PolicyMachineBinding, message: "a NIC on a Proxmox network zone bridge must use a Proxmox network of this namespace (vmbr70/101/subnet-a, vmbr1/5/subnet-c); got",
		},
		"MachineGlobalPool": {
			reason: "a GlobalInClusterIPPool can be claimed across namespaces",
			refused: input{kind: gvkMachineV1, ns: owning(), obj: machineV1(m{"bridge": "vmbr70", "vlan": 101,
				"ipv4PoolRef": m{"apiGroup": "ipam.cluster.x-k8s.io", "kind": "GlobalInClusterIPPool", "name": "subnet-a"}})},
			admitted: input{kind: gvkMachineV1, ns: owning(), obj: machineV1(m{"bridge": "vmbr70", "vlan": 101,
				"ipv4PoolRef": m{"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "subnet-a"}})},
			policy: PolicyMachineBinding, message: "a NIC on a Proxmox network zone bridge must use a Proxmox network of this namespace (vmbr70/101/subnet-a, vmbr1/5/subnet-c); got",
		},
		"MachineV2DualPool": {
			reason:   "v1alpha2: a NIC with two pools names no Proxmox network, which are IPv4 only",
			refused:  input{kind: gvkMachineV2, ns: owning(), obj: machineV2(nicV2("net0", "vmbr70", 101, "subnet-a", "subnet-a6"))},
			admitted: input{kind: gvkMachineV2, ns: owning(), obj: machineV2(nicV2("net0", "vmbr70", 101, "subnet-a"))},
			policy:   PolicyMachineBinding, message: "a NIC on a Proxmox network zone bridge must use a Proxmox network of this namespace (vmbr70/101/subnet-a, vmbr1/5/subnet-c); got",
		},
		"MachineUplinkVLAN": {
			reason:   "the uplink VLAN on another bridge reaches the zone trunk",
			refused:  input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr1", 70, ""))},
			admitted: input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr1", 71, ""))},
			policy:   PolicyMachineBinding, message: uplinkVLANMsg + "vmbr1/70",
		},
		"MachineUplinkVLANAdditional": {
			reason:   "every NIC counts, not only the first",
			refused:  input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr1", 0, ""), nicV1("vmbr2", 70, "p"))},
			admitted: input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr1", 0, ""), nicV1("vmbr2", 7, "p"))},
			policy:   PolicyMachineBinding, message: uplinkVLANMsg + "vmbr2/70",
		},
		"MachineUplinkBridge": {
			reason:   "no NIC at all on a bridge over the uplink's parent",
			refused:  input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr0", 0, ""))},
			admitted: input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr9", 0, ""))},
			policy:   PolicyMachineBinding, message: uplinkBrMsg + "vmbr0",
		},
		"MachineUplinkBridgeTagged": {
			reason:   "a tagged NIC there would enslave the parent's VLAN device",
			refused:  input{kind: gvkMachineV2, ns: plain(), obj: machineV2(nicV2("net0", "vmbr0", 12))},
			admitted: input{kind: gvkMachineV2, ns: plain(), obj: machineV2(nicV2("net0", "vmbr3", 12))},
			policy:   PolicyMachineBinding, message: uplinkBrMsg + "vmbr0/12",
		},
		"MachineRawBridgeNextToVPC": {
			reason:   "a raw bridge and VLAN next to a VPC subnet, in a namespace that owns networks",
			refused:  input{kind: gvkMachineV1, ns: owning(), obj: machineV1(own, nicV1("vmbr1", 5, "subnet-z"))},
			admitted: input{kind: gvkMachineV1, ns: owning(), obj: machineV1(own, nicV1("vmbr1", 5, "subnet-c"))},
			policy:   PolicyMachineBinding, message: everyNICMsg,
		},
		"MachineRawDefault": {
			reason:   "the first NIC on a raw bridge, in a namespace that owns networks",
			refused:  input{kind: gvkMachineV1, ns: owning(), obj: machineV1(nicV1("vmbr9", 0, ""))},
			admitted: input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("vmbr9", 0, ""))},
			policy:   PolicyMachineBinding, message: everyNICMsg,
		},
		"TemplateForeignNetwork": {
			reason:   "a ProxmoxMachineTemplate is judged by its template's spec",
			refused:  input{kind: gvkTemplateV1, ns: owning(), obj: template(machineV1(nicV1("vmbr70", 102, "subnet-b")))},
			admitted: input{kind: gvkTemplateV1, ns: owning(), obj: template(machineV1(nicV1("vmbr70", 101, "subnet-a")))},
			policy:   PolicyMachineBinding, message: zoneMsgOwning + "vmbr70/102/subnet-b",
		},
		"MachineForeignVNet": {
			reason:   "a NIC on another tenant's VNet of the zone",
			refused:  input{kind: gvkMachineV1, ns: owningVNet(), obj: machineV1(nicV1("pxa0102", 0, "subnet-b"))},
			admitted: input{kind: gvkMachineV1, ns: owningVNet(), obj: machineV1(nicV1("pxa0101", 0, "subnet-a"))},
			policy:   PolicyMachineBinding, message: vnetMsgOwning + "pxa0102/subnet-b",
		},
		"MachineV2ForeignVNet": {
			reason:   "v1alpha2: the own VNet with another network's pool",
			refused:  input{kind: gvkMachineV2, ns: owningVNet(), obj: machineV2(nicV2("net0", "pxa0101", 0, "subnet-b"))},
			admitted: input{kind: gvkMachineV2, ns: owningVNet(), obj: machineV2(nicV2("net0", "pxa0101", 0, "subnet-a"))},
			policy:   PolicyMachineBinding, message: vnetMsgOwning + "pxa0101/subnet-b",
		},
		"MachineVNetWithoutNetworks": {
			reason:   "a namespace without networks uses no zone VNet at all",
			refused:  input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("pxa0101", 0, "subnet-a"))},
			admitted: input{kind: gvkMachineV1, ns: plain(), obj: machineV1(nicV1("pxb0101", 0, "subnet-a"))},
			policy:   PolicyMachineBinding, message: vnetMsgNone + "pxa0101/subnet-a",
		},
		"MachineVNetTagged": {
			reason:   "a tag on a VNet NIC would double-tag its frames",
			refused:  input{kind: gvkMachineV1, ns: owningVNet(), obj: machineV1(nicV1("pxa0101", 101, "subnet-a"))},
			admitted: input{kind: gvkMachineV1, ns: owningVNet(), obj: machineV1(nicV1("pxa0101", 0, "subnet-a"))},
			policy:   PolicyMachineBinding, message: vnetTaggedMsg + "pxa0101/101",
		},
		"MachineVNetNextToBridge": {
			reason:   "while a zone moves, the plain bridge and the VNet of the same network are both the namespace's; another tenant's VNet is not",
			refused:  input{kind: gvkMachineV1, ns: owningVNet(), obj: machineV1(nicV1("vmbr70", 101, "subnet-a"), nicV1("pxa0103", 0, "subnet-a"))},
			admitted: input{kind: gvkMachineV1, ns: owningVNet(), obj: machineV1(nicV1("vmbr70", 101, "subnet-a"), nicV1("pxa0101", 0, "subnet-a"))},
			policy:   PolicyMachineBinding, message: vnetMsgOwning + "vmbr70/101/subnet-a, pxa0103/subnet-a",
		},
		"MachineUpdateNotJudged": {
			reason:   "CREATE only: capmox keeps updating its machines while a network drains",
			refused:  input{kind: gvkMachineV1, ns: owning(), obj: machineV1(nicV1("vmbr70", 102, "subnet-b"))},
			admitted: input{op: OperationUpdate, kind: gvkMachineV1, ns: owning(), obj: machineV1(nicV1("vmbr70", 102, "subnet-b")), old: machineV1(nicV1("vmbr70", 102, "subnet-b"))},
			policy:   PolicyMachineBinding, message: zoneMsgOwning + "vmbr70/102/subnet-b",
		},
	}
	for name, c := range nicValueCases() {
		cases[name] = c
	}
	return cases
}

func TestMachineBinding(t *testing.T) { runPairs(t, testConfig(), machineCases()) }

func TestMachineBindingDisabled(t *testing.T) {
	cfg := testConfig()
	cfg.MachineBinding = false
	v := mustValidator(t, cfg)
	in := input{kind: gvkMachineV1, ns: owning(), obj: machineV1(nicV1("vmbr70", 102, "subnet-b"))}
	if d, err := v.Review(in.request(t), in.ns); err != nil || !d.Allowed {
		t.Errorf("admission.enabled=false must admit: %+v %v", d, err)
	}
}
