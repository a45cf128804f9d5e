package capmoxrender_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// FuzzRenderNodes feeds arbitrary documents through ParseKubernetesNodes and
// RenderNodes: nothing panics, every error is one of the package's
// categories, and an accepted pool always yields a machine template whose
// sizes pass the schema rules and whose every NIC carries a bridge and VLAN
// the admission rules take (capmox.ValidBridge, capmox.ValidVLAN).
func FuzzRenderNodes(f *testing.F) {
	for _, p := range []string{"testdata/scenarios/nodes-raw/input.yaml", "testdata/scenarios/nodes-full-storage/input.yaml", "testdata/scenarios/nodes-seed/input.yaml", "testdata/scenarios/nodes-failuredomains/input.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("apiVersion: apps.cozystack.io/v1alpha1\nkind: KubernetesNodes\nmetadata: {name: a-b, namespace: n}\nspec: {cluster: a, substrate: proxmox, resources: {cpu: 1e3, memory: 7}}\n"))
	f.Add([]byte("apiVersion: apps.cozystack.io/v1alpha1\nkind: KubernetesNodes\nmetadata: {name: a-b, namespace: n}\nspec: {cluster: a, replicas: 2, proxmox: {pool: p, vlan: 3}}\n"))
	for _, bridge := range []string{"vmbr70", "vmbr70,tag=102", "pxa0102,", "vmbr0123456789ab", "'vmbr0 '", "vmbr0=1"} {
		f.Add([]byte("apiVersion: apps.cozystack.io/v1alpha1\nkind: KubernetesNodes\nmetadata: {name: a-b, namespace: tenant-a}\n" +
			"spec: {cluster: a, substrate: proxmox, replicas: 1, resources: {cpu: 2, memory: 4Gi}, " +
			"proxmox: {pool: p, templateTags: [t], dnsServers: [8.8.8.8], network: {bridge: " + bridge + ", vlan: 102}}}\n"))
	}
	f.Add([]byte("apiVersion: apps.cozystack.io/v1alpha1\nkind: KubernetesNodes\nmetadata: {name: a-b, namespace: tenant-a}\n" +
		"spec: {cluster: a, substrate: proxmox, replicas: 3, resources: {cpu: 2, memory: 4Gi}, " +
		"proxmox: {pool: p, templateTags: [t], dnsServers: [8.8.8.8], network: {bridge: vmbr0}, failureDomains: [{name: pve1}, {name: b, nodes: [pve2, pve3]}]}}\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		n, err := capmoxrender.ParseKubernetesNodes(doc)
		if err != nil {
			if !errors.Is(err, capmoxrender.ErrInput) {
				t.Fatalf("parse error outside ErrInput: %v", err)
			}
			return
		}
		objs, err := capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{})
		if err != nil {
			if !errors.Is(err, capmoxrender.ErrRefused) && !errors.Is(err, capmoxrender.ErrSchema) {
				t.Fatalf("render error outside the categories: %v", err)
			}
			return
		}
		for _, u := range objs {
			if u.GetKind() == "ProxmoxMachineTemplate" {
				checkFuzzedTemplate(t, u)
			}
		}
	})
}

// checkFuzzedTemplate: a rendered machine template's sizes pass the schema
// rules and its every NIC carries a bridge and VLAN admission takes.
func checkFuzzedTemplate(t *testing.T, u *unstructured.Unstructured) {
	spec := u.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	cores, _ := spec["numCores"].(int64)
	mem, _ := spec["memoryMiB"].(int64)
	if cores < 1 || mem < 8 || mem%8 != 0 {
		t.Fatalf("accepted pool rendered numCores %d memoryMiB %d", cores, mem)
	}
	network, _ := spec["network"].(map[string]any)
	nics, _ := network["networkDevices"].([]any)
	nics = append(nics, network["default"])
	adds, _ := network["additionalDevices"].([]any)
	for _, n := range append(nics, adds...) {
		nic, ok := n.(map[string]any)
		if !ok {
			continue
		}
		if b, _ := nic["bridge"].(string); !capmox.ValidBridge(b) {
			t.Fatalf("accepted pool rendered a NIC on bridge %q, which admission refuses", b)
		}
		if v, ok := nic["vlan"].(int64); ok && !capmox.ValidVLAN(v) {
			t.Fatalf("accepted pool rendered a NIC with VLAN %d", v)
		}
	}
}

// FuzzReadObjects: reading a lookup file never panics, everything read can
// be looked up again by kind, namespace and name, and a ProxmoxNetwork's
// status.vnet is either a VNet ID or refused by name.
func FuzzReadObjects(f *testing.F) {
	b, err := os.ReadFile("testdata/scenarios/cluster-vpc/lookup.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{apiVersion: cluster.x-k8s.io/v1beta1, kind: Cluster, metadata: {name: c, namespace: n}, spec: {infrastructureRef: {kind: ProxmoxCluster}}}]\n"))
	for _, vnet := range []string{"pxa0117", "117", "true", "\"vmbr1.117\"", "{a: b}"} {
		f.Add([]byte("apiVersion: proxmox.cozystack.io/v1alpha1\nkind: ProxmoxNetwork\nmetadata: {name: p, namespace: n}\nstatus: {bridge: vmbr1, vlan: 117, vnet: " + vnet + "}\n"))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		o, err := capmoxrender.ReadObjectsBytes(doc)
		if err != nil {
			return
		}
		checkVNet(t, o)
		_, _, _ = o.ClusterInfrastructureKind(context.Background(), "n", "c")
		o.Add(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
			"metadata": map[string]any{"name": "fz", "namespace": "fz"},
			"spec":     map[string]any{"infrastructureRef": map[string]any{"kind": "ProxmoxCluster"}},
		}})
		kind, found, err := o.ClusterInfrastructureKind(context.Background(), "fz", "fz")
		if err != nil || !found || kind != "ProxmoxCluster" {
			t.Fatalf("an added Cluster is not found: %q %t %v", kind, found, err)
		}
	})
}

// checkVNet looks the fuzzed ProxmoxNetwork n/p up: a refusal names
// status.vnet, and an accepted VNet is empty or a Proxmox VNet ID.
func checkVNet(t *testing.T, o *capmoxrender.Objects) {
	n, found, err := o.ProxmoxNetwork(context.Background(), "n", "p")
	var r *capmoxrender.RefusalError
	switch {
	case err != nil && (!errors.As(err, &r) || r.Field != "status.vnet"):
		t.Fatalf("a ProxmoxNetwork lookup failed other than by refusing status.vnet: %v", err)
	case err == nil && found && n.VNet != "" && !vnetID.MatchString(n.VNet):
		t.Fatalf("status.vnet %q accepted, but it is not a VNet ID", n.VNet)
	}
}

var vnetID = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]{1,7}$`)
