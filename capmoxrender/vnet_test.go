package capmoxrender_test

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// TestNodesVNet: a network whose status names a Proxmox SDN VNet attaches
// net0 to the VNet with no VLAN tag, in both capmox generations; a
// status.vnet that is not a VNet ID is refused by name, next to the
// admitted control and to the plain bridge and VLAN without it.
func TestNodesVNet(t *testing.T) {
	cases := map[string]struct {
		vnet       any
		wantBridge string
		wantVLAN   bool
		wantErr    string
	}{
		"VNetAccepted":   {vnet: "pxa3901", wantBridge: "pxa3901"},
		"NoVNetTagged":   {vnet: nil, wantBridge: "vmbr1", wantVLAN: true},
		"VNetNumber":     {vnet: int64(3901), wantErr: `ProxmoxNetwork tenant-e2e/` + subnetID("tenant-e2e", "net", "private") + `: status.vnet is int64 3901, not a string: give the Proxmox SDN VNet ID the controller reports, or leave status.vnet out for a plain bridge and VLAN`},
		"VNetBool":       {vnet: true, wantErr: `ProxmoxNetwork tenant-e2e/` + subnetID("tenant-e2e", "net", "private") + `: status.vnet is bool true, not a string: give the Proxmox SDN VNet ID the controller reports, or leave status.vnet out for a plain bridge and VLAN`},
		"VNetNotAnID":    {vnet: "vmbr1.3901", wantErr: `ProxmoxNetwork tenant-e2e/` + subnetID("tenant-e2e", "net", "private") + `: status.vnet "vmbr1.3901" is not a Proxmox SDN VNet ID (2-8 letters and digits, starting with a letter)`},
		"VNetTooLong":    {vnet: "pxabc3901", wantErr: `ProxmoxNetwork tenant-e2e/` + subnetID("tenant-e2e", "net", "private") + `: status.vnet "pxabc3901" is not a Proxmox SDN VNet ID (2-8 letters and digits, starting with a letter)`},
		"VNetDigitFirst": {vnet: "3901", wantErr: `ProxmoxNetwork tenant-e2e/` + subnetID("tenant-e2e", "net", "private") + `: status.vnet "3901" is not a Proxmox SDN VNet ID (2-8 letters and digits, starting with a letter)`},
	}
	for name, tc := range cases {
		for _, gen := range []capmoxrender.Capmox{capmoxrender.CapmoxV07, capmoxrender.CapmoxV08} {
			t.Run(name+"/"+string(gen), func(t *testing.T) {
				n := validNodes()
				n.Spec.Proxmox.Network = capmoxrender.NodeNetwork{VPC: "net", Subnet: "private"}
				l := networks(t)
				u := pxnet("tenant-e2e", subnetID("tenant-e2e", "net", "private"), true)
				if tc.vnet != nil {
					if err := unstructured.SetNestedField(u.Object, tc.vnet, "status", "vnet"); err != nil {
						t.Fatal(err)
					}
				}
				l.Add(u)
				objs, err := capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{Capmox: gen, Networks: l})
				if tc.wantErr != "" {
					checkRefusal(t, name, err, tc.wantErr)
					var r *capmoxrender.RefusalError
					if errors.As(err, &r) && r.Field != "status.vnet" {
						t.Errorf("refusal names field %q, want status.vnet", r.Field)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				bridge, vlan := net0(t, objs[0], gen)
				if bridge != tc.wantBridge || vlan != tc.wantVLAN {
					t.Errorf("net0 is bridge %q with a VLAN tag %t, want %q with a tag %t", bridge, vlan, tc.wantBridge, tc.wantVLAN)
				}
			})
		}
	}
}

// net0 reads the bridge of the template's first NIC and whether it carries
// a VLAN tag.
func net0(t *testing.T, tmpl *unstructured.Unstructured, gen capmoxrender.Capmox) (string, bool) {
	t.Helper()
	path := []string{"spec", "template", "spec", "network", "default"}
	dev, found, err := unstructured.NestedMap(tmpl.Object, path...)
	if gen == capmoxrender.CapmoxV08 {
		var devs []any
		devs, found, err = unstructured.NestedSlice(tmpl.Object, "spec", "template", "spec", "network", "networkDevices")
		if len(devs) > 0 {
			dev, _ = devs[0].(map[string]any)
		}
	}
	if err != nil || !found || dev == nil {
		t.Fatalf("%s: no first NIC in %v (%v)", gen, tmpl.Object["spec"], err)
	}
	bridge, _ := dev["bridge"].(string)
	_, vlan := dev["vlan"]
	return bridge, vlan
}

// TestNetworkStatusTypes: a status field of the wrong type is refused by
// its path and says what it should be, instead of being read as absent
// (a vlan written as the string "3900" reported as "no bridge or VLAN
// yet"); the control, the same network with vlan 3900, renders.
func TestNetworkStatusTypes(t *testing.T) {
	id := subnetID("tenant-e2e", "net", "private")
	cases := map[string]struct {
		field string
		value any
		want  string
	}{
		"Control":    {field: "vlan", value: int64(3900)},
		"VLANWord":   {field: "vlan", value: "none", want: `ProxmoxNetwork tenant-e2e/` + id + `: status.vlan is the string "none": it must be an integer`},
		"VLANString": {field: "vlan", value: "3900", want: `ProxmoxNetwork tenant-e2e/` + id + `: status.vlan is the string "3900": it must be an integer, written without quotes (vlan: 3900, not vlan: "3900")`},
		"VLANFloat":  {field: "vlan", value: 3900.5, want: `ProxmoxNetwork tenant-e2e/` + id + `: status.vlan is 3900.5: it must be a whole number within 32 bits`},
		"MTUString":  {field: "mtu", value: "1400", want: `ProxmoxNetwork tenant-e2e/` + id + `: status.mtu is the string "1400": it must be an integer, written without quotes (mtu: 1400, not mtu: "1400")`},
		"BridgeList": {field: "bridge", value: []any{"vmbr1"}, want: `ProxmoxNetwork tenant-e2e/` + id + `: status.bridge is a list [vmbr1], not a string: give the value the controller reports`},
		"PrefixBool": {field: "prefix", value: true, want: `ProxmoxNetwork tenant-e2e/` + id + `: status.prefix is a boolean true: it must be an integer`},
		"GatewayNum": {field: "gateway", value: int64(10), want: `ProxmoxNetwork tenant-e2e/` + id + `: status.gateway is a number 10, not a string: give the value the controller reports`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := validNodes()
			n.Spec.Proxmox.Network = capmoxrender.NodeNetwork{VPC: "net", Subnet: "private"}
			l := networks(t)
			u := pxnet("tenant-e2e", id, true)
			if err := unstructured.SetNestedField(u.Object, tc.value, "status", tc.field); err != nil {
				t.Fatal(err)
			}
			l.Add(u)
			_, err := capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{Networks: l})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("the control: %v", err)
				}
				return
			}
			checkRefusal(t, name, err, tc.want)
			var r *capmoxrender.RefusalError
			if errors.As(err, &r) && r.Field != "status."+tc.field {
				t.Errorf("refusal names field %q, want status.%s", r.Field, tc.field)
			}
		})
	}
}
