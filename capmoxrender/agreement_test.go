package capmoxrender_test

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	pmv1alpha1 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha1"
	pmv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha2"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// codeCheck runs capmoxrender's schema constraints on a rendered capmox
// object of either generation.
func codeCheck(t testing.TB, u *unstructured.Unstructured) error {
	t.Helper()
	b, err := json.Marshal(u.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	switch u.GetAPIVersion() + "/" + u.GetKind() {
	case "infrastructure.cluster.x-k8s.io/v1alpha1/ProxmoxMachineTemplate":
		var s pmv1alpha1.ProxmoxMachineTemplateSpec
		mustUnmarshal(t, b, &s)
		return capmoxrender.CheckMachineSpecV1alpha1(s.Template.Spec)
	case "infrastructure.cluster.x-k8s.io/v1alpha2/ProxmoxMachineTemplate":
		var s pmv1alpha2.ProxmoxMachineTemplateSpec
		mustUnmarshal(t, b, &s)
		return capmoxrender.CheckMachineSpecV1alpha2(s.Template.Spec)
	case "infrastructure.cluster.x-k8s.io/v1alpha1/ProxmoxCluster":
		var s pmv1alpha1.ProxmoxClusterSpec
		mustUnmarshal(t, b, &s)
		return capmoxrender.CheckProxmoxClusterV1alpha1(s)
	case "infrastructure.cluster.x-k8s.io/v1alpha2/ProxmoxCluster":
		var s pmv1alpha2.ProxmoxClusterSpec
		mustUnmarshal(t, b, &s)
		return capmoxrender.CheckProxmoxClusterV1alpha2(s)
	}
	t.Fatalf("no code check for %s", u.GroupVersionKind())
	return nil
}

func mustUnmarshal(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// TestConstraintsAgreeWithCRDs breaks rendered objects one rule at a time
// and checks that the real CRD schema and the constraints in code both
// reject each break (the code may be stricter, never laxer), and both
// accept the unbroken object.
func TestConstraintsAgreeWithCRDs(t *testing.T) {
	type breaker func(spec map[string]any)
	machine := func(m map[string]any) map[string]any { return m["template"].(map[string]any)["spec"].(map[string]any) }
	nic := func(gen capmoxrender.Capmox, m map[string]any) map[string]any {
		n := machine(m)["network"].(map[string]any)
		if gen == capmoxrender.CapmoxV07 {
			return n["default"].(map[string]any)
		}
		return n["networkDevices"].([]any)[0].(map[string]any)
	}
	cases := map[string]struct {
		reason   string
		scenario string
		kind     string
		brk      func(gen capmoxrender.Capmox) breaker
	}{
		"MemoryNotMultipleOf8": {reason: "multipleOf 8", scenario: "nodes-full-storage", kind: "ProxmoxMachineTemplate",
			brk: func(capmoxrender.Capmox) breaker {
				return func(s map[string]any) { machine(s)["memoryMiB"] = int64(954) }
			}},
		"ZeroCores": {reason: "numCores minimum 1", scenario: "nodes-raw", kind: "ProxmoxMachineTemplate",
			brk: func(capmoxrender.Capmox) breaker { return func(s map[string]any) { machine(s)["numCores"] = int64(0) } }},
		"StorageLinked": {reason: "storage needs full", scenario: "nodes-full-storage", kind: "ProxmoxMachineTemplate",
			brk: func(capmoxrender.Capmox) breaker { return func(s map[string]any) { machine(s)["full"] = false } }},
		"DuplicateTag": {reason: "matchTags is a set", scenario: "nodes-raw", kind: "ProxmoxMachineTemplate",
			brk: func(capmoxrender.Capmox) breaker {
				return func(s map[string]any) { machine(s)["templateSelector"] = map[string]any{"matchTags": []any{"a", "a"}} }
			}},
		"BadTag": {reason: "the tag pattern", scenario: "nodes-raw", kind: "ProxmoxMachineTemplate",
			brk: func(capmoxrender.Capmox) breaker {
				return func(s map[string]any) { machine(s)["templateSelector"] = map[string]any{"matchTags": []any{"-a"}} }
			}},
		"VLAN4095": {reason: "vlan maximum 4094", scenario: "nodes-full-storage", kind: "ProxmoxMachineTemplate",
			brk: func(g capmoxrender.Capmox) breaker { return func(s map[string]any) { nic(g, s)["vlan"] = int64(4095) } }},
		"MTU500": {reason: "mtu 1 or 576..65520", scenario: "nodes-full-storage", kind: "ProxmoxMachineTemplate",
			brk: func(g capmoxrender.Capmox) breaker { return func(s map[string]any) { nic(g, s)["mtu"] = int64(500) } }},
		"EmptyBridge": {reason: "bridge minLength 1", scenario: "nodes-raw", kind: "ProxmoxMachineTemplate",
			brk: func(g capmoxrender.Capmox) breaker { return func(s map[string]any) { nic(g, s)["bridge"] = "" } }},
		"PoolKind": {reason: "pool kind InClusterIPPool or GlobalInClusterIPPool", scenario: "nodes-vpc", kind: "ProxmoxMachineTemplate",
			brk: func(g capmoxrender.Capmox) breaker {
				return func(s map[string]any) {
					ref := map[string]any{"apiGroup": "ipam.cluster.x-k8s.io", "kind": "IPPool", "name": "x"}
					if g == capmoxrender.CapmoxV07 {
						nic(g, s)["ipv4PoolRef"] = ref
					} else {
						nic(g, s)["ipPoolRef"] = []any{ref}
					}
				}
			}},
		"BootVolume4": {reason: "sizeGb minimum 5", scenario: "nodes-disk", kind: "ProxmoxMachineTemplate",
			brk: func(capmoxrender.Capmox) breaker {
				return func(s map[string]any) {
					machine(s)["disks"].(map[string]any)["bootVolume"].(map[string]any)["sizeGb"] = int64(4)
				}
			}},
		"VMIDRangeBackwards": {reason: "end should be greater than or equal to start", scenario: "nodes-placement", kind: "ProxmoxMachineTemplate",
			brk: func(capmoxrender.Capmox) breaker {
				return func(s map[string]any) {
					machine(s)["vmIDRange"] = map[string]any{"start": int64(6000), "end": int64(5000)}
				}
			}},
		"VMIDBelow100": {reason: "vmIDRange minimum 100", scenario: "nodes-placement", kind: "ProxmoxMachineTemplate",
			brk: func(capmoxrender.Capmox) breaker {
				return func(s map[string]any) {
					machine(s)["vmIDRange"] = map[string]any{"start": int64(99), "end": int64(5000)}
				}
			}},
		"NoDNS": {reason: "dnsServers minItems 1", scenario: "cluster-ipv4", kind: "ProxmoxCluster",
			brk: func(capmoxrender.Capmox) breaker { return func(s map[string]any) { s["dnsServers"] = []any{} } }},
		"NoAddresses": {reason: "IPv4Config addresses must be provided", scenario: "cluster-ipv4", kind: "ProxmoxCluster",
			brk: func(capmoxrender.Capmox) breaker {
				return func(s map[string]any) { s["ipv4Config"].(map[string]any)["addresses"] = []any{} }
			}},
		"NoIPv4Config": {reason: "at least one ip config", scenario: "cluster-ipv4", kind: "ProxmoxCluster",
			brk: func(capmoxrender.Capmox) breaker { return func(s map[string]any) { delete(s, "ipv4Config") } }},
	}
	scen := map[string]scenario{}
	for _, s := range loadScenarios(t) {
		scen[s.Name] = s
	}
	for name, tc := range cases {
		for _, gen := range generations {
			t.Run(name+"/"+string(gen), func(t *testing.T) {
				var obj *unstructured.Unstructured
				for _, o := range renderScenario(t, scen[tc.scenario], gen) {
					if o.GetKind() == tc.kind {
						obj = o
					}
				}
				set := loadSchemas(t)[gen]
				if _, err := set.validate(obj); err != nil || codeCheck(t, obj) != nil {
					t.Fatalf("the unbroken object must pass both: crd %v, code %v", err, codeCheck(t, obj))
				}
				broken := obj.DeepCopy()
				tc.brk(gen)(broken.Object["spec"].(map[string]any))
				if _, err := set.validate(broken); err == nil {
					t.Errorf("%s: the CRD schema accepted the break; the test does not test the rule", tc.reason)
				}
				if err := codeCheck(t, broken); err == nil {
					t.Errorf("%s: the CRD rejects the break but the code constraints accept it", tc.reason)
				}
			})
		}
	}
}

// BenchmarkSchemaCheck compares the constraints in code, run on the typed
// spec as the renderer does, with the naive approach of running the full CRD
// validator (pruning, defaulting, OpenAPI, list types and CEL) on the same
// rendered ProxmoxMachineTemplate, and reports the ratio.
func BenchmarkSchemaCheck(b *testing.B) {
	var obj *unstructured.Unstructured
	for _, s := range loadScenarios(b) {
		if s.Name == "nodes-vpc" {
			obj = renderScenario(b, s, capmoxrender.CapmoxV08)[0]
		}
	}
	raw, err := json.Marshal(obj.Object["spec"])
	if err != nil {
		b.Fatal(err)
	}
	var spec pmv1alpha2.ProxmoxMachineTemplateSpec
	mustUnmarshal(b, raw, &spec)
	set := loadSchemas(b)[capmoxrender.CapmoxV08]
	var crd, code time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := set.validate(obj); err != nil {
			b.Fatal(err)
		}
		crd += time.Since(start)
		start = time.Now()
		if err := capmoxrender.CheckMachineSpecV1alpha2(spec.Template.Spec); err != nil {
			b.Fatal(err)
		}
		code += time.Since(start)
	}
	b.ReportMetric(float64(crd.Nanoseconds())/float64(b.N), "crd-ns/op")
	b.ReportMetric(float64(code.Nanoseconds())/float64(b.N), "code-ns/op")
	b.ReportMetric(float64(crd)/float64(code), "crd/code")
}

// TestMirrorTypesMatchCRDs fills every field of the read-side mirror types
// (ProxmoxMachine spec and status) and checks that the real CRDs know each
// JSON name: pruning would drop an unknown one, which the validator reports.
func TestMirrorTypesMatchCRDs(t *testing.T) {
	str, node, vmid := "proxmox://6c9a3b2e-1f4d-4d6e-9a1b-2c3d4e5f6a7b", "pve1", int64(119)
	v1 := pmv1alpha1.ProxmoxMachine{
		Spec: pmv1alpha1.ProxmoxMachineSpec{ProviderID: &str, VirtualMachineID: &vmid,
			TemplateSelector: &pmv1alpha1.TemplateSelector{MatchTags: []string{"talos"}}, NumCores: 2, NumSockets: 1, MemoryMiB: 2048,
			Network: &pmv1alpha1.NetworkSpec{Default: &pmv1alpha1.NetworkDevice{Bridge: "vmbr0"}}},
		Status: pmv1alpha1.ProxmoxMachineStatus{Ready: true, ProxmoxNode: &node, VMStatus: "ready"},
	}
	ready := "ready"
	v2 := pmv1alpha2.ProxmoxMachine{
		Spec: pmv1alpha2.ProxmoxMachineSpec{ProviderID: str, VirtualMachineID: &vmid,
			TemplateSelector: &pmv1alpha2.TemplateSelector{MatchTags: []string{"talos"}},
			Network:          &pmv1alpha2.NetworkSpec{NetworkDevices: []pmv1alpha2.NetworkDevice{{Name: &[]string{"net0"}[0], Bridge: &[]string{"vmbr0"}[0]}}}},
		Status: pmv1alpha2.ProxmoxMachineStatus{ProxmoxNode: &node, VMStatus: &ready},
	}
	for gen, m := range map[capmoxrender.Capmox]any{capmoxrender.CapmoxV07: v1, capmoxrender.CapmoxV08: v2} {
		t.Run(string(gen), func(t *testing.T) {
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{}
			if err := json.Unmarshal(b, &u.Object); err != nil {
				t.Fatal(err)
			}
			version := "v1alpha1"
			if gen == capmoxrender.CapmoxV08 {
				version = "v1alpha2"
			}
			u.SetAPIVersion("infrastructure.cluster.x-k8s.io/" + version)
			u.SetKind("ProxmoxMachine")
			u.SetName("m")
			checked, err := loadSchemas(t)[gen].validate(u)
			if !checked || err != nil {
				t.Fatalf("ProxmoxMachine %s mirror does not match the CRD (checked %t): %v", version, checked, err)
			}
		})
	}
}
