package admission

import (
	"encoding/json"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// m is a JSON object literal.
type m = map[string]any

// l is a JSON list literal.
type l = []any

const tenant = "tenant-a"

// testConfig is one zone vmbr70 with uplink VLAN 70 over bond0, whose
// other bridge vmbr0 is an uplink bridge, and whose VLANs have Proxmox SDN
// VNets pxa0001-pxa4094; egress gateways run in px-egress; tenant-exempt
// is exempt by configuration.
func testConfig() Config {
	c := DefaultConfig()
	c.Zones = []Zone{{Name: "default", Bridge: "vmbr70", UplinkVLAN: 70, UplinkBridges: []string{"vmbr0"}, EgressGatewayNamespace: "px-egress", VNetPrefix: "pxa"}}
	c.ExemptNamespaces = []string{"tenant-exempt"}
	return c
}

func mustValidator(t testing.TB, c Config) *Validator {
	t.Helper()
	v, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fataler is what the helpers need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

func js(t fataler, v any) []byte {
	t.Helper()
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// owning is tenant-a owning the network vmbr70/101/subnet-a and a raw one on
// vmbr1, with the default switch ovn-default.
func owning() *Namespace {
	return &Namespace{Name: tenant, Annotations: map[string]string{
		AnnotationProxmoxNetworks: "vmbr70/101/subnet-a,vmbr1/5/subnet-c",
		AnnotationLogicalSwitch:   "ovn-default",
	}}
}

// owningVNet is tenant-a owning the network vmbr70/101/subnet-a, whose
// VLAN has the VNet pxa0101, as the controller lists it for a zone in mode
// VNets.
func owningVNet() *Namespace {
	return &Namespace{Name: tenant, Annotations: map[string]string{AnnotationProxmoxNetworks: "pxa0101/subnet-a,vmbr70/101/subnet-a"}}
}

// owns is tenant-a owning the Proxmox networks of the annotation value
// networks.
func owns(networks string) *Namespace {
	return &Namespace{Name: tenant, Annotations: map[string]string{AnnotationProxmoxNetworks: networks}}
}

// plain is a namespace without Proxmox networks.
func plain() *Namespace { return &Namespace{Name: tenant} }

func poolRef(name string) m {
	return m{"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": name}
}

func nicV1(bridge string, vlan int, poolName string) m {
	n := m{"bridge": bridge, "model": "virtio"}
	if vlan != 0 {
		n["vlan"] = vlan
	}
	if poolName != "" {
		n["ipv4PoolRef"] = poolRef(poolName)
	}
	return n
}

func nicV2(name, bridge string, vlan int, pools ...string) m {
	n := m{"name": name, "bridge": bridge}
	if vlan != 0 {
		n["vlan"] = vlan
	}
	if len(pools) > 0 {
		var refs l
		for _, p := range pools {
			refs = append(refs, poolRef(p))
		}
		n["ipPoolRef"] = refs
	}
	return n
}

// machineV1 is a v1alpha1 ProxmoxMachine with network.default and the
// given additional devices (each gets a name net1, net2, ...).
func machineV1(def m, additional ...m) m {
	network := m{}
	if def != nil {
		network["default"] = def
	}
	var adds l
	for i, a := range additional {
		a["name"] = "net" + string(rune('1'+i))
		adds = append(adds, a)
	}
	if adds != nil {
		network["additionalDevices"] = adds
	}
	return m{"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha1", "kind": "ProxmoxMachine",
		"metadata": m{"name": "m", "namespace": tenant},
		"spec":     m{"sourceNode": "pve1", "templateID": 100, "network": network}}
}

func machineV2(devices ...m) m {
	ds := l{} // v1alpha2 requires network.networkDevices, even empty
	for _, d := range devices {
		ds = append(ds, d)
	}
	return m{"apiVersion": "infrastructure.cluster.x-k8s.io/v1alpha2", "kind": "ProxmoxMachine",
		"metadata": m{"name": "m", "namespace": tenant},
		"spec":     m{"templateID": 100, "sourceNode": "pve1", "network": m{"networkDevices": ds}}}
}

func template(machine m) m {
	return m{"apiVersion": machine["apiVersion"], "kind": "ProxmoxMachineTemplate",
		"metadata": m{"name": "t", "namespace": tenant},
		"spec":     m{"template": m{"spec": machine["spec"]}}}
}

func gvk(group, version, kind string) metav1.GroupVersionKind {
	return metav1.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

var (
	gvkMachineV1  = gvk(GroupCAPMOX, "v1alpha1", KindMachine)
	gvkMachineV2  = gvk(GroupCAPMOX, "v1alpha2", KindMachine)
	gvkTemplateV1 = gvk(GroupCAPMOX, "v1alpha1", KindTemplate)
	gvkTemplateV2 = gvk(GroupCAPMOX, "v1alpha2", KindTemplate)
	gvkVM         = gvk(GroupKubeVirt, "v1", KindVM)
	gvkVMI        = gvk(GroupKubeVirt, "v1", KindVMI)
	gvkPod        = gvk("", "v1", KindPod)
)

// vm is a KubeVirt VirtualMachine whose template carries networks and
// annotations.
func vm(networks l, annotations map[string]string) m {
	tmpl := m{"spec": m{"networks": networks, "domain": m{}}}
	if annotations != nil {
		tmpl["metadata"] = m{"annotations": annotations}
	}
	return m{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": m{"name": "vm", "namespace": tenant},
		"spec":     m{"runStrategy": "Always", "template": tmpl}}
}

// vmi is a VirtualMachineInstance with networks and annotations of its own.
func vmi(networks l, annotations map[string]string) m {
	meta := m{"name": "vmi", "namespace": tenant}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	return m{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
		"metadata": meta, "spec": m{"networks": networks, "domain": m{}}}
}

func multus(name string, def bool) m {
	mu := m{"networkName": name}
	if def {
		mu["default"] = true
	}
	return m{"name": "n-" + name, "multus": mu}
}

func pod(annotations map[string]string) m {
	meta := m{"name": "p", "namespace": tenant}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	return m{"apiVersion": "v1", "kind": "Pod", "metadata": meta,
		"spec": m{"containers": l{m{"name": "c", "image": "busybox"}}}}
}

func deleting(obj m) m {
	obj["metadata"].(m)["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	return obj
}

func in(ns string, obj m) m {
	obj["metadata"].(m)["namespace"] = ns
	return obj
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
