package admission

import (
	"errors"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func loadConfig(t testing.TB) Config {
	t.Helper()
	data, err := os.ReadFile("testdata/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseConfig(t *testing.T) {
	got := loadConfig(t)
	want := Config{
		ReleaseNamespace: "cozy-proxmox-network",
		Zones: []Zone{
			{Name: "default", Bridge: "vmbr70", UplinkVLAN: 70, UplinkBridges: []string{"vmbr0"}, EgressGatewayNamespace: "cozy-proxmox-network", VNetPrefix: "pxa"},
			{Name: "public", Bridge: "vmbr80", UplinkVLAN: 80, UplinkBridges: []string{"vmbr0", "vmbr1"}},
		},
		MachineBinding: true, VMAttachments: true, PodAttachments: true, ImmutableFields: true,
		ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		ExemptNamespaces:  []string{"tenant-root"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"kube-system", "cozy-proxmox-network", "tenant-root"}, got.exemptNamespaces()); diff != "" {
		t.Errorf("exempt namespaces (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"vmbr0", "vmbr1"}, got.uplinkBridges()); diff != "" {
		t.Errorf("uplink bridges, each once (-want +got):\n%s", diff)
	}
}

// TestConfigRefusals pairs the package's render failures with controls.
func TestConfigRefusals(t *testing.T) {
	cases := map[string]struct {
		reason   string
		refused  string
		admitted string
		want     string
	}{
		"UplinkVLANRange": {
			reason:   "an uplink VLAN is a VLAN ID",
			refused:  "zones: [{name: z, bridge: vmbr70, uplinkVLAN: 4095}]",
			admitted: "zones: [{name: z, bridge: vmbr70, uplinkVLAN: 4094}]",
			want:     "zones[z].uplinkVLAN must be a VLAN ID (1-4094), got 4095",
		},
		"UplinkVLANWord": {
			reason:   "a word is not a VLAN ID",
			refused:  "zones: [{name: z, bridge: vmbr70, uplinkVLAN: seventy}]",
			admitted: "zones: [{name: z, bridge: vmbr70, uplinkVLAN: '70'}]",
			want:     "zones[z].uplinkVLAN must be a VLAN ID (1-4094), got seventy",
		},
		"UplinkBridgesNotList": {
			reason:   "uplinkBridges is a list",
			refused:  "zones: [{name: z, bridge: vmbr70, uplinkBridges: vmbr0}]",
			admitted: "zones: [{name: z, bridge: vmbr70, uplinkBridges: [vmbr0]}]",
			want:     "zones[z].uplinkBridges must be a list of bridge names",
		},
		"UplinkBridgeIsZoneBridge": {
			reason:   "a zone bridge cannot be an uplink bridge of any zone",
			refused:  "zones: [{name: a, bridge: vmbr70}, {name: b, bridge: vmbr71, uplinkBridges: [vmbr70]}]",
			admitted: "zones: [{name: a, bridge: vmbr70}, {name: b, bridge: vmbr71, uplinkBridges: [vmbr0]}]",
			want:     "uplinkBridges lists vmbr70, which is a zone bridge",
		},
		"DenyAndWarn": {
			reason:   "the API refuses Deny with Warn",
			refused:  "admission: {validationActions: [Deny, Warn]}",
			admitted: "admission: {validationActions: [Deny, Audit]}",
			want:     "admission.validationActions: Deny and Warn cannot be used together",
		},
		"MiscasedKey": {
			reason:   "a key read in another case would be taken for it",
			refused:  "Zones: [{name: z, bridge: vmbr70}]",
			admitted: "zones: [{name: z, bridge: vmbr70}]\nother: [kept for other readers]",
			want:     `unknown field "Zones"; did you mean "zones"?`,
		},
		"BothCases": {
			reason:   "of a key in two cases one would be dropped without a word",
			refused:  "zones: [{name: z, bridge: vmbr70, uplinkVLAN: 70, uplinkVlan: 80}]",
			admitted: "zones: [{name: z, bridge: vmbr70, uplinkVLAN: 70, vlanRanges: [100-199]}]",
			want:     `unknown field "zones[0].uplinkVlan"; did you mean "uplinkVLAN"?`,
		},
		"SDNMode": {
			reason:   "sdn.mode is Check or VNets, as the zone's CRD has it",
			refused:  "zones: [{name: z, bridge: vmbr70, sdn: {mode: vnets, zone: pxa}}]",
			admitted: "zones: [{name: z, bridge: vmbr70, sdn: {mode: VNets, zone: pxa}}]",
			want:     `zones[z].sdn.mode "vnets" is neither Check nor VNets`,
		},
		"SDNVNetsWithoutPrefix": {
			reason:   "mode VNets names its VNets after sdn.vnetPrefix or sdn.zone",
			refused:  "zones: [{name: z, bridge: vmbr70, sdn: {mode: VNets}}]",
			admitted: "zones: [{name: z, bridge: vmbr70, sdn: {mode: Check}}]",
			want:     "zones[z].sdn: mode VNets needs sdn.zone (its first four characters are the VNet prefix) or sdn.vnetPrefix",
		},
		"SDNPrefix": {
			reason:   "a prefix and four digits make a VNet ID of at most 8 characters",
			refused:  "zones: [{name: z, bridge: vmbr70, sdn: {mode: VNets, zone: pxtenant, vnetPrefix: pxten}}]",
			admitted: "zones: [{name: z, bridge: vmbr70, sdn: {mode: VNets, zone: pxtenant}}]",
			want:     `zones[z].sdn.vnetPrefix "pxten" must be 1-4 letters and digits starting with a letter`,
		},
		"BridgeNamedLikeVNet": {
			reason:   "a zone bridge named like a VNet would fall under the VNet rule",
			refused:  "zones: [{name: a, bridge: vmbr0070}, {name: b, bridge: vmbr71, sdn: {mode: VNets, zone: vmbrz}}]",
			admitted: "zones: [{name: a, bridge: vmbr0070}, {name: b, bridge: vmbr71, sdn: {mode: VNets, zone: vmbrz, vnetPrefix: vz}}]",
			want:     "zones[a].bridge vmbr0070 is named like a VNet of prefix vmbr: rename the bridge or choose another sdn.vnetPrefix",
		},
		"ZoneWithoutBridge": {
			reason:   "a zone has a bridge",
			refused:  "zones: [{name: z}]",
			admitted: "zones: [{name: z, bridge: vmbr70}]",
			want:     "zones[z]: set the zone's bridge",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseConfig([]byte(tc.admitted)); err != nil {
				t.Fatalf("control: %v", err)
			}
			_, err := ParseConfig([]byte(tc.refused))
			if !errors.Is(err, ErrConfig) || !strings.HasSuffix(err.Error(), ": "+tc.want) {
				t.Errorf("%s: got %v, want ...: %s", tc.reason, err, tc.want)
			}
		})
	}
}

func TestPoliciesGolden(t *testing.T) {
	set, err := Policies(loadConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := set.YAML()
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/policies.golden"
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
		t.Errorf("policies differ from %s (-want +got):\n%s", golden, diff)
	}
}

func TestPoliciesFollowSwitches(t *testing.T) {
	cfg := testConfig()
	cfg.VMAttachments = false
	cfg.ImmutableFields = false
	cfg.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit}
	set, err := Policies(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, p := range set.Policies {
		names = append(names, p.Name)
		b := set.Bindings[i]
		if b.Name != p.Name || b.Spec.PolicyName != p.Name {
			t.Errorf("binding %s does not bind policy %s", b.Name, p.Name)
		}
		if diff := cmp.Diff(cfg.ValidationActions, b.Spec.ValidationActions); diff != "" {
			t.Errorf("binding actions (-want +got):\n%s", diff)
		}
		if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
			t.Errorf("%s: failurePolicy must be Fail", p.Name)
		}
	}
	if diff := cmp.Diff([]string{PolicyMachineBinding, PolicyPodAttachments}, names); diff != "" {
		t.Errorf("policies (-want +got):\n%s", diff)
	}
}

func TestWebhookConfiguration(t *testing.T) {
	url := "https://127.0.0.1:9443/validate"
	wc, err := WebhookConfiguration("proxmox-network", testConfig(), admissionregistrationv1.WebhookClientConfig{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range wc.Webhooks {
		names = append(names, w.Name)
		if *w.FailurePolicy != admissionregistrationv1.Fail || *w.SideEffects != admissionregistrationv1.SideEffectClassNone {
			t.Errorf("%s: failurePolicy Fail and no side effects", w.Name)
		}
	}
	want := []string{
		"proxmox-network-machine-binding.proxmox.cozystack.io",
		"proxmox-network-vm-attachments.proxmox.cozystack.io",
		"proxmox-network-pod-attachments.proxmox.cozystack.io",
		"proxmox-kubernetes-immutable-fields.proxmox.cozystack.io",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// FuzzParseConfig: a configuration that parses builds policies and a
// validator; one that does not is ErrConfig.
func FuzzParseConfig(f *testing.F) {
	data, err := os.ReadFile("testdata/values.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte("zones: [{name: z, bridge: b, uplinkVLAN: 1.5}]"))
	f.Add([]byte("zones: [{name: z, bridge: b, uplinkBridges: [1]}]"))
	f.Add([]byte("admission: {validationActions: [Nope]}"))
	f.Add([]byte("zones: [{name: z, bridge: b, sdn: {mode: VNets}}]"))
	f.Add([]byte("zones: [{name: z, bridge: pxa0001, sdn: {mode: VNets, zone: pxa}}, {name: y, bridge: c, sdn: {mode: Check, vnetPrefix: 1}}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error is not ErrConfig: %v", err)
			}
			return
		}
		if _, err := Policies(c); err != nil {
			t.Fatalf("parsed configuration builds no policies: %v", err)
		}
		if _, err := New(c); err != nil {
			t.Fatalf("parsed configuration builds no validator: %v", err)
		}
	})
}

// TestConfigLongValueIsCut: a quoted value of 1 MB is named in a short
// refusal, cut with the count of the bytes left out.
func TestConfigLongValueIsCut(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for name, c := range map[string]struct{ values, field string }{
		"ValidationAction": {"admission: {validationActions: [" + long + "]}\n", "admission.validationActions"},
		"SDNMode":          {"zones: [{name: z, bridge: vmbr70, sdn: {mode: " + long + "}}]\n", "zones[z].sdn.mode"},
		"VNetPrefix":       {"zones: [{name: z, bridge: vmbr70, sdn: {mode: VNets, vnetPrefix: " + long + "}}]\n", "zones[z].sdn.vnetPrefix"},
	} {
		_, err := ParseConfig([]byte(c.values))
		if !errors.Is(err, ErrConfig) || len(err.Error()) > 1024 || !strings.Contains(err.Error(), c.field+`: "xxx`) && !strings.Contains(err.Error(), c.field+` "xxx`) || !strings.Contains(err.Error(), "more bytes)") {
			t.Errorf("%s: %d bytes: %.500v", name, len(err.Error()), err)
		}
	}
}
