package tenantplan_test

import (
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

func TestTenantVNets(t *testing.T) {
	base := "platform:\n  capmox: {user: capmox@pve, token: capi}\ntenants:\n- name: a\n  storage: s1\n  networks:\n  - %s\n- name: b\n  storage: s2\n  networks:\n  - {zone: pxa, vnets: [pxa0102]}\n"
	cases := map[string]struct{ network, want string }{
		"Admitted":        {"{zone: pxa, vnets: [pxa0100, pxa0101]}", ""},
		"NoSDNZone":       {"{vnets: [pxa0100]}", `tenants[0].networks[0].zone: zone "localnetwork" is not a Proxmox SDN zone`},
		"WithBridge":      {"{zone: pxa, bridge: vmbr0, vnets: [pxa0100]}", "a network of vnets has no bridge, vlans or untagged"},
		"VNetID":          {"{zone: pxa, vnets: [pxa010000]}", `tenants[0].networks[0].vnets[0]: VNet "pxa010000" is not a Proxmox VNet ID`},
		"AnotherTenants":  {"{zone: pxa, vnets: [pxa0102]}", `VNet "pxa/pxa0102" already belongs to`},
		"VLANsStillValid": {"{bridge: vmbr0, vlans: [100]}", ""},
	}
	for name, tc := range cases {
		spec, err := tenantplan.LoadTenants([]byte(strings.Replace(base, "%s", tc.network, 1)))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		case tc.want == "" && name == "Admitted":
			got := strings.Join(spec.Tenants[0].Networks[0].SDNPaths(), " ")
			if got != "/sdn/zones/pxa/pxa0100 /sdn/zones/pxa/pxa0101" {
				t.Errorf("SDN paths of the VNets: %s", got)
			}
		}
	}
}
