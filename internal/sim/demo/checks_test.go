package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// lastCheck is the most recent invariant an act recorded.
func lastCheck(t *testing.T, s *Stage) (bool, string) {
	t.Helper()
	if len(s.Checks) == 0 {
		t.Fatal("no invariant was recorded")
	}
	c := s.Checks[len(s.Checks)-1]
	return c.Holds, c.Detail
}

func TestAuditSeesACrossTenantGrant(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	s := &Stage{Out: &out}
	defer s.closePVE()
	if err := actACLs.Play(ctx, s); err != nil {
		t.Fatal(err)
	}
	if holds, detail := lastCheck(t, s); !holds {
		t.Fatalf("a fresh apply does not audit clean: %s", detail)
	}
	for _, id := range []string{"alpha@pve!ccm", "alpha@pve!csi", "beta@pve!ccm", "beta@pve!csi"} {
		secret, ok := s.PVE.TokenSecret(id)
		if !ok {
			t.Fatalf("token %s was not created", id)
		}
		if strings.Contains(out.String(), secret) {
			t.Errorf("the output holds the secret of %s", id)
		}
	}
	if err := s.PVE.SetACL("/pool/beta", pveacl.KindUser, "alpha@pve", false, "PVEAuditor"); err != nil {
		t.Fatal(err)
	}
	c, err := s.proxmox()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := tenantplan.LoadTenants([]byte(tenantsSpec))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.audit(ctx, c, spec); err != nil {
		t.Fatal(err)
	}
	holds, detail := lastCheck(t, s)
	if holds || !strings.Contains(detail, "CrossTenantReach alpha@pve /pool/beta") {
		t.Errorf("alpha's grant on beta's pool: holds=%v detail=%q", holds, detail)
	}
}

func TestTemplateTagsCheck(t *testing.T) {
	tmpl := func(vmid int, tags string) talostemplate.VMResource {
		return talostemplate.VMResource{VMID: vmid, Node: "pve", Template: 1, Tags: tags}
	}
	cases := map[string]struct {
		reason string
		vms    []talostemplate.VMResource
		holds  bool
	}{
		"Unique": {
			reason: "two templates with different tag sets hold",
			vms:    []talostemplate.VMResource{tmpl(9000, "cozystack;talos"), tmpl(9001, "cozystack;talos-v1.13.6")},
			holds:  true,
		},
		"SameSetOtherOrder": {
			reason: "a tag set is a set: order and separators do not make it another",
			vms:    []talostemplate.VMResource{tmpl(9000, "cozystack;talos"), tmpl(9001, "talos,cozystack")},
		},
		"VMsDoNotCount": {
			reason: "a VM (not a template) sharing the tags is no duplicate",
			vms:    []talostemplate.VMResource{tmpl(9000, "cozystack;talos"), {VMID: 100, Tags: "cozystack;talos"}},
			holds:  true,
		},
		"NoTemplate": {
			reason: "the act built a template, so finding none fails",
			vms:    []talostemplate.VMResource{{VMID: 100, Tags: "cozystack;talos"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &Stage{Out: &bytes.Buffer{}}
			s.templates(tc.vms)
			got, detail := lastCheck(t, s)
			if diff := cmp.Diff(tc.holds, got); diff != "" {
				t.Errorf("%s: -want +got:\n%s (detail %q)", tc.reason, diff, detail)
			}
		})
	}
}

func TestCheckRendered(t *testing.T) {
	v, err := demoValidator()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := renderAlpha(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var rendered *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ProxmoxMachineTemplate" {
			rendered = o
		}
	}
	if rendered == nil {
		t.Fatal("the pool rendered no ProxmoxMachineTemplate")
	}
	template := func(network map[string]any, numCores int64) *unstructured.Unstructured {
		o := rendered.DeepCopy()
		if err := unstructured.SetNestedField(o.Object, network, "spec", "template", "spec", "network"); err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(o.Object, numCores, "spec", "template", "spec", "numCores"); err != nil {
			t.Fatal(err)
		}
		return o
	}
	onBridge := func(bridge string, vlan int64) map[string]any {
		return map[string]any{"default": map[string]any{"bridge": bridge, "vlan": vlan,
			"ipv4PoolRef": map[string]any{"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "subnet-b1"}}}
	}
	cases := map[string]struct {
		reason string
		obj    *unstructured.Unstructured
		want   string
	}{
		"OffZone": {
			reason: "a NIC on a bridge outside every zone is admitted",
			obj:    template(onBridge("vmbr0", 20), 2),
		},
		"NoCores": {
			reason: "capmox's schema refuses a machine without cores",
			obj:    template(onBridge("vmbr0", 20), 0),
			want:   "numCores",
		},
		"ForeignZoneNetwork": {
			reason: "a NIC on the zone bridge needs a network of its namespace",
			obj:    template(onBridge("vmbr1", 3904), 2),
			want:   "proxmox-network-machine-binding",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if err := checkRendered(v, tc.obj); err != nil {
				got = err.Error()
			}
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("%s: got %q, want an error containing %q", tc.reason, got, tc.want)
			}
		})
	}
}
