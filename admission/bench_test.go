package admission

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

var benchNetworks = []string{
	"subnet-a",
	"subnet-a, tenant-a/subnet-b@net2, subnet-c@net3",
	"tenant-b/subnet-b",
	`[{"name":"subnet-a","namespace":"tenant-a","interface":"net1"},{"name":"subnet-b"}]`,
	`[{"name":"x","namespace":"tenant-b"}]`,
	"tenant-a / x",
}

// naiveForeignNetworks decides like the policy's CEL does: it builds the
// entry pattern with the request's namespace and compiles it on every
// request.
func naiveForeignNetworks(v, ns string) bool {
	if v == "" {
		return false
	}
	if strings.Contains(v, `\`) {
		return true
	}
	if strings.ContainsAny(v, `[{"`) {
		own := regexp.MustCompile(`^(?i:"namespace")\s*:\s*"` + regexp.QuoteMeta(ns) + `"$`)
		for _, m := range regexp.MustCompile(`(?i:"namespace")\s*:\s*"[^"]*"`).FindAllString(v, -1) {
			if !own.MatchString(m) {
				return true
			}
		}
		return false
	}
	entry := regexp.MustCompile(`^\s*(` + regexp.QuoteMeta(ns) + `/)?` + celLabel + `(@` + celLabel + `)?\s*$`)
	for _, e := range strings.Split(v, ",") {
		if !entry.MatchString(e) {
			return true
		}
	}
	return false
}

// BenchmarkForeignNetworks measures the webhook's check of a
// k8s.v1.cni.cncf.io/networks value against the naive per-request regex
// compilation, in the same run, and reports the ratio.
func BenchmarkForeignNetworks(b *testing.B) {
	for _, v := range benchNetworks {
		if foreignNetworks(v, tenant) != naiveForeignNetworks(v, tenant) {
			b.Fatalf("the two disagree on %q", v)
		}
	}
	b.ReportAllocs()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		foreignNetworks(benchNetworks[i%len(benchNetworks)], tenant)
	}
	ours := time.Since(start)
	start = time.Now()
	for i := 0; i < b.N; i++ {
		naiveForeignNetworks(benchNetworks[i%len(benchNetworks)], tenant)
	}
	naive := time.Since(start)
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "ns/check")
	b.ReportMetric(float64(naive.Nanoseconds())/float64(b.N), "naive-ns/check")
	b.ReportMetric(float64(naive)/float64(ours), "speedup")
}

// FuzzReview feeds arbitrary objects to every policy, in a namespace with
// the given annotations or (annotated false) none: the validator never
// panics, fails only with ErrMalformedObject, and admits a machine or
// template only when every NIC's bridge is a Linux bridge name and its VLAN
// a VLAN ID.
func FuzzReview(f *testing.F) {
	f.Add(uint8(0), true, js(f, machineV1(nicV1("vmbr70", 101, "subnet-a"))), []byte(nil), "vmbr70/101/subnet-a", true)
	f.Add(uint8(3), false, js(f, vm(l{multus("tenant-b/x", true)}, ann(AnnotationNetworks, "a"))), js(f, vm(nil, nil)), "", true)
	f.Add(uint8(5), false, js(f, pod(ann(AnnotationLogicalSwitch, "x"))), js(f, pod(nil)), "ovn-default", true)
	f.Add(uint8(1), true, []byte(`{"spec":{"network":{"networkDevices":[{"vlan":1.5}]}}}`), []byte(nil), "", true)
	f.Add(uint8(0), true, js(f, machineV1(nicV1("pxa0101", 0, "subnet-a"))), []byte(nil), "pxa0101/subnet-a,vmbr70/101/subnet-a", true)
	f.Add(uint8(1), true, js(f, machineV2(nicV2("net0", "pxa0102", 102, "subnet-b"))), []byte(nil), "pxa0101/subnet-a", true)
	f.Add(uint8(6), false, js(f, helmRelease(KindKubernetesNodes, nodePool(m{"cluster": "c2"}))), js(f, helmRelease(KindKubernetesNodes, nodePool(nil))), "", true)
	f.Add(uint8(8), false, js(f, application(KindKubernetes, m{"substrate": 1})), js(f, application(KindKubernetes, nil)), "", true)
	// Bridges and VLANs capmox would write into net0 as settings of their
	// own or that name no interface, in a namespace without networks.
	for _, b := range []string{"vmbr70,tag=102", "pxa0102,", "vmbr0 ", "vmbr0=1", "", "vmbr0123456789ab"} {
		f.Add(uint8(0), true, js(f, machineV1(nicV1(b, 0, "subnet-b"))), []byte(nil), "", false)
		f.Add(uint8(1), true, js(f, machineV2(nicV2("net0", "vmbr9", 0), nicV2("net1", b, 0, "p"))), []byte(nil), "", false)
		f.Add(uint8(2), true, js(f, template(machineV1(nicV1("vmbr9", 0, ""), nicV1(b, 0, "p")))), []byte(nil), "", false)
	}
	for _, vlan := range []int{0, -1, 4095} {
		f.Add(uint8(1), true, js(f, machineV2(nicV2("net0", "vmbr9", 0), withVLAN(nicV2("net1", "vmbr9", 0, "p"), vlan))), []byte(nil), "", false)
	}
	kinds := []metav1.GroupVersionKind{gvkMachineV1, gvkMachineV2, gvkTemplateV1, gvkVM, gvkVMI, gvkPod, gvkHelmRelease, gvkKubernetesNodes, gvkKubernetes}
	v := mustValidator(f, testConfig())
	f.Fuzz(func(t *testing.T, k uint8, create bool, obj, old []byte, networks string, annotated bool) {
		op := OperationUpdate
		if create {
			op = OperationCreate
		}
		req := Request{Operation: op, Kind: kinds[int(k)%len(kinds)], Namespace: tenant, Object: obj, OldObject: old}
		ns := &Namespace{Name: tenant}
		if annotated {
			ns.Annotations = map[string]string{AnnotationProxmoxNetworks: networks, AnnotationLogicalSwitch: networks}
		}
		d, err := v.Review(req, ns)
		if err != nil {
			if !errors.Is(err, ErrMalformedObject) {
				t.Fatalf("error is not ErrMalformedObject: %v", err)
			}
			return
		}
		if !d.Allowed && (d.Policy == "" || d.Message == "") {
			t.Fatalf("a refusal without policy or message: %+v", d)
		}
		if d.Allowed && create && (req.Kind.Kind == KindMachine || req.Kind.Kind == KindTemplate) {
			o, err := decodeObject(obj)
			if err != nil {
				t.Fatalf("admitted an object the rules cannot read: %v", err)
			}
			nics, _, err := machineNICs(req.Kind.Kind, o)
			if err != nil {
				t.Fatalf("admitted a machine whose NICs cannot be read: %v", err)
			}
			for _, n := range nics {
				if n.hasBridge && !capmox.ValidBridge(n.bridge) || n.hasVLAN && !capmox.ValidVLAN(n.vlan) {
					t.Fatalf("admitted a NIC on bridge %q with VLAN %d (set %t)", n.bridge, n.vlan, n.hasVLAN)
				}
			}
		}
	})
}
