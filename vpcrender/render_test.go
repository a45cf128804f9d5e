package vpcrender

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	ipamv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/ipam/v1alpha2"
	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current render")

func loadSpec(t *testing.T, path string) Spec {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSpec(data)
	if err != nil {
		t.Fatalf("ParseSpec(%s): %v", path, err)
	}
	return s
}

// TestGolden renders every testdata/*.yaml spec and compares the YAML stream
// with testdata/<name>.golden. Run with -update to rewrite them after a
// reviewed change.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs in testdata: %v", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		t.Run(name, func(t *testing.T) {
			r, err := Render(loadSpec(t, in))
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			got, err := r.YAML()
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("render of %s differs from %s (-want +got):\n%s", in, golden, diff)
			}
		})
	}
}

// find returns the rendered object of type T with the given name.
func find[T any](t *testing.T, r Rendering, name string) *T {
	t.Helper()
	for _, o := range r.Objects {
		if v, ok := o.(*T); ok && nameOf(o) == name {
			return v
		}
	}
	t.Fatalf("no %T named %s in the render", new(T), name)
	return nil
}

func nameOf(o any) string {
	switch v := o.(type) {
	case *Vpc:
		return v.Name
	case *kubeovnv1.Subnet:
		return v.Name
	case *NetworkAttachmentDefinition:
		return v.Name
	case *ipamv1alpha2.InClusterIPPool:
		return v.Name
	case *v1alpha1.ProxmoxNetwork:
		return v.Name
	case *VpcEgressGateway:
		return v.Name
	}
	return ""
}

// TestProxmoxSubnetMapping checks the VPC chart mapping of the facts field by
// field, independently of the golden files.
func TestProxmoxSubnetMapping(t *testing.T) {
	r, err := Render(loadSpec(t, "testdata/mixed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	workers, data := "subnet-ff692499", "subnet-bd55eab5"
	sub := find[kubeovnv1.Subnet](t, r, workers)
	wantSub := kubeovnv1.SubnetSpec{
		Vpc: "vpc-a0c9fc", CIDRBlock: "10.208.64.0/24", Gateway: "10.208.64.1",
		ExcludeIps: []string{"10.208.64.100..10.208.64.199"}, Provider: workers + ".tenant-test.ovn",
		Protocol: "IPv4", Vlan: workers, LogicalGateway: true, MTU: 8996,
		EnableLb: ptr.To(false), Private: ptr.To(false),
	}
	if diff := cmp.Diff(wantSub, sub.Spec); diff != "" {
		t.Errorf("Subnet %s spec (-want +got):\n%s", workers, diff)
	}
	if sub.Labels[LabelZone] != "jumbo" {
		t.Errorf("Subnet zone label = %q, want jumbo", sub.Labels[LabelZone])
	}
	pool := find[ipamv1alpha2.InClusterIPPool](t, r, data)
	if diff := cmp.Diff(ipamv1alpha2.InClusterIPPoolSpec{Addresses: []string{"10.208.65.32-10.208.65.95"}, Prefix: 25, Gateway: "10.208.65.1"}, pool.Spec); diff != "" {
		t.Errorf("default VM range is the middle half of the subnet (-want +got):\n%s", diff)
	}
	wantAnn := map[string]string{AnnotationMetric: "102", AnnotationSkipDeleteWebhook: ""}
	if diff := cmp.Diff(wantAnn, pool.Annotations); diff != "" {
		t.Errorf("pool annotations: metric is 100 + the subnet's index (-want +got):\n%s", diff)
	}
	if got := find[v1alpha1.ProxmoxNetwork](t, r, data).Spec; got != (v1alpha1.ProxmoxNetworkSpec{Zone: "jumbo", Subnet: data, IPPool: data}) {
		t.Errorf("ProxmoxNetwork spec = %+v", got)
	}
	if got := find[kubeovnv1.Subnet](t, r, "subnet-8d88a9d5"); !ptr.Deref(got.Spec.Private, false) || got.Spec.Vlan != "" {
		t.Errorf("the overlay subnet stays private and VLAN-less: %+v", got.Spec)
	}
	vpc := find[Vpc](t, r, "vpc-a0c9fc")
	wantPolicies := []PolicyRoute{
		{Priority: 30500, Action: "allow", Match: "ip4.dst == 10.208.128.0/24"},
		{Priority: 30500, Action: "allow", Match: "ip4.dst == 10.208.129.0/24"},
		{Priority: 30500, Action: "allow", Match: "ip4.dst == 192.0.2.1/32"},
	}
	if diff := cmp.Diff(wantPolicies, vpc.Spec.PolicyRoutes); diff != "" {
		t.Errorf("egress policy routes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]VpcPeering{{RemoteVpc: "vpc-37739d", LocalConnectIP: "169.254.19.246/30"}}, vpc.Spec.VpcPeerings); diff != "" {
		t.Errorf("peering (-want +got):\n%s", diff)
	}
	gw := find[VpcEgressGateway](t, r, "vpc-a0c9fc-egress")
	wantGW := EgressGatewaySpec{
		Vpc: "vpc-a0c9fc", Replicas: 2, InternalSubnet: data, ExternalSubnet: "px-transit",
		NodeSelector: gw.Spec.NodeSelector,
		Policies:     []EgressPolicy{{SNAT: true, Subnets: []string{data, workers}}},
	}
	if diff := cmp.Diff(wantGW, gw.Spec); diff != "" {
		t.Errorf("egress gateway (-want +got):\n%s", diff)
	}
	if len(gw.Spec.NodeSelector) != 1 || gw.Spec.NodeSelector[0].MatchLabels["pxtenant.provider-network.kubernetes.io/ready"] != "true" {
		t.Errorf("the gateway must run where the provider network is ready: %+v", gw.Spec.NodeSelector)
	}
	if gw.Namespace != "cozy-proxmox-network" {
		t.Errorf("gateway namespace = %q", gw.Namespace)
	}
}

// TestRenderDeterministic renders each input twice from independently
// parsed specs and requires identical bytes.
func TestRenderDeterministic(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.yaml")
	for _, in := range inputs {
		a, err1 := Render(loadSpec(t, in))
		b, err2 := Render(loadSpec(t, in))
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", in, err1, err2)
		}
		ya, _ := a.YAML()
		yb, _ := b.YAML()
		if string(ya) != string(yb) {
			t.Errorf("%s renders differently twice", in)
		}
	}
}

func TestUnstructured(t *testing.T) {
	r, err := Render(loadSpec(t, "testdata/mixed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	us, err := r.Unstructured()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, u := range us {
		kinds = append(kinds, u.GetKind()+"/"+u.GetName())
	}
	want := []string{
		"Vpc/vpc-a0c9fc",
		"NetworkAttachmentDefinition/subnet-ff692499", "Subnet/subnet-ff692499", "InClusterIPPool/subnet-ff692499", "ProxmoxNetwork/subnet-ff692499",
		"NetworkAttachmentDefinition/subnet-8d88a9d5", "Subnet/subnet-8d88a9d5",
		"NetworkAttachmentDefinition/subnet-bd55eab5", "Subnet/subnet-bd55eab5", "InClusterIPPool/subnet-bd55eab5", "ProxmoxNetwork/subnet-bd55eab5",
		"VpcEgressGateway/vpc-a0c9fc-egress",
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("objects in apply order (-want +got):\n%s", diff)
	}
	if v, _, _ := unstructuredBool(us[2].Object, "spec", "private"); v {
		t.Errorf("a Proxmox subnet must say private: false explicitly")
	}
}

func unstructuredBool(obj map[string]any, path ...string) (bool, bool, error) {
	cur := any(obj)
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return false, false, nil
		}
		cur, ok = m[p]
		if !ok {
			return false, false, nil
		}
	}
	b, ok := cur.(bool)
	return b, ok, nil
}
