package charts

import (
	"strings"
	"testing"
)

// TestSchemaRefuses: values that cannot work are refused at render time
// with a message naming the field.
func TestSchemaRefuses(t *testing.T) {
	cases := map[string]struct {
		values string
		want   []string
	}{
		"NoImage":            {"proxmoxNetworkController: {image: ''}", []string{"proxmoxNetworkController.image is required"}},
		"UnknownKey":         {"proxmoxNetworkController: {replica: 2}", []string{"replica"}},
		"UnknownTopKey":      {"zone: []", []string{"zone"}},
		"ZeroReplicas":       {"proxmoxNetworkController: {replicas: 0}", []string{"replicas", "minimum"}},
		"BadDuration":        {"proxmoxNetworkController: {subnetPruneTimeout: ten minutes}", []string{"subnetPruneTimeout"}},
		"BadLogLevel":        {"proxmoxNetworkController: {logLevel: loud}", []string{"logLevel"}},
		"BadNBAddress":       {"ovn: {nbAddress: 'http://ovn:6641'}", []string{"nbAddress"}},
		"BadTLSSecret":       {"ovn: {tlsSecret: kube-ovn-tls}", []string{"tlsSecret"}},
		"BadSDNSecret":       {"sdn: {credentialsSecrets: [pve-sdn]}", []string{"credentialsSecrets"}},
		"LongProvider":       {"providerNetwork: {name: thirteenchars}", []string{"providerNetwork", "name"}},
		"LongBridge":         {"zones: [{name: a, bridge: vmbr-far-too-long, vlanRanges: ['1']}]", []string{"zones", "bridge"}},
		"BadRange":           {"zones: [{name: a, bridge: vmbr1, vlanRanges: ['1..9']}]", []string{"vlanRanges"}},
		"NoRanges":           {"zones: [{name: a, bridge: vmbr1}]", []string{"vlanRanges"}},
		"BadUplinkVLAN":      {"zones: [{name: a, bridge: vmbr1, vlanRanges: ['1'], uplinkVLAN: 5000}]", []string{"uplinkVLAN"}},
		"UplinkBridgesText":  {"zones: [{name: a, bridge: vmbr1, vlanRanges: ['1'], uplinkBridges: vmbr0}]", []string{"uplinkBridges"}},
		"EgressNoSubnet":     {"zones: [{name: a, bridge: vmbr1, vlanRanges: ['1'], egress: {gatewayNamespace: egress-a}}]", []string{"egress", "externalSubnet"}},
		"SDNMode":            {"zones: [{name: a, bridge: vmbr1, vlanRanges: ['1'], sdn: {mode: vnets, zone: pxa}}]", []string{"sdn", "mode"}},
		"SDNVNetsNoZone":     {"zones: [{name: a, bridge: vmbr1, vlanRanges: ['1'], sdn: {mode: VNets, vnetPrefix: pxa}}]", []string{"sdn", "zone"}},
		"SDNLongPrefix":      {"zones: [{name: a, bridge: vmbr1, vlanRanges: ['1'], sdn: {mode: VNets, zone: pxa, vnetPrefix: pxten}}]", []string{"vnetPrefix"}},
		"ZoneTypo":           {"zones: [{name: a, bridge: vmbr1, vlanRanges: ['1'], vlanRange: ['2']}]", []string{"vlanRange"}},
		"TransitNoCIDR":      {"transit: {enabled: true}", []string{"cidr", "gateway"}},
		"TransitBadCIDR":     {"transit: {enabled: true, cidr: 192.0.2.0, gateway: 192.0.2.1}", []string{"cidr"}},
		"TransitBadVLAN":     {"transit: {vlan: 0}", []string{"vlan"}},
		"BadAction":          {"admission: {validationActions: [Block]}", []string{"validationActions"}},
		"NoAction":           {"admission: {validationActions: []}", []string{"validationActions"}},
		"UsageAboveOne":      {"alerts: {zoneUsageWarning: 90}", []string{"zoneUsageWarning"}},
		"DashboardNamespace": {"dashboard: {enabled: true, namespace: Tenant_Root}", []string{"dashboard", "namespace"}},
		"DashboardTypo":      {"dashboard: {enable: true}", []string{"enable"}},
		"DashboardOperator":  {"dashboard: {instanceSelector: {matchExpressions: [{key: dashboards, operator: Equals}]}}", []string{"operator"}},
		"ReaderWithoutName":  {"proxmoxNetworkController: {metrics: {readers: [{namespace: monitoring}]}}", []string{"readers", "name"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := render(mainChart, values(t, tc.values))
			if err == nil {
				t.Fatalf("values %q rendered", tc.values)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	if _, err := render(crdsChart, map[string]any{"zones": []any{}}); err == nil || !strings.Contains(err.Error(), "zones") {
		t.Errorf("the CRDs chart took values: %v", err)
	}
}
