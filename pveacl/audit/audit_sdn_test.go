package audit

import (
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

const vnetTenants = `platform:
  capmox: {user: capmox@pve, token: capi}
tenants:
  - name: alpha
    storage: alpha-disks
    tokens: {capmox: capi}
    templates: [9000]
    networks:
      - {zone: pxa, vnets: [pxa0100, pxa0101]}
  - name: beta
    storage: beta-disks
    tokens: {capmox: capi}
    templates: [9000]
    networks:
      - {zone: pxa, vnets: [pxa0102]}
`

func TestTenantVNetsGrantedExactlyAndForeignReachReported(t *testing.T) {
	spec, err := tenantplan.LoadTenants([]byte(vnetTenants))
	if err != nil {
		t.Fatal(err)
	}
	cfg := converged(t, spec)
	ev := pveacl.NewEvaluator(cfg)
	alpha := "alpha@pve!capi"
	for path, want := range map[string]bool{"/sdn/zones/pxa/pxa0100": true, "/sdn/zones/pxa/pxa0101": true,
		"/sdn/zones/pxa/pxa0102": false, "/sdn/zones/pxa": false, "/sdn/zones/localnetwork/vmbr0": false} {
		if got := ev.Permissions(alpha, path).Has("SDN.Use"); got != want {
			t.Errorf("%s SDN.Use on %s = %v, want %v", alpha, path, got, want)
		}
	}
	rep, err := Run(cfg, spec)
	if err != nil {
		t.Fatal(err)
	}
	if rep.HasErrors() {
		t.Fatalf("the converged VNet tenants have errors: %+v", rep.Findings)
	}
	for _, grant := range []struct{ path string }{{"/sdn/zones/pxa/pxa0102"}, {"/sdn/zones/pxa"}} {
		leaked := cfg.Clone()
		// A privilege-separated token holds what both it and its user hold.
		leaked.ACL[pveacl.ACLKey{Path: grant.path, Kind: pveacl.KindToken, Subject: alpha, Role: pveacl.RoleSDNUser}] = true
		leaked.ACL[pveacl.ACLKey{Path: grant.path, Kind: pveacl.KindUser, Subject: "alpha@pve", Role: pveacl.RoleSDNUser}] = true
		rep, err := Run(leaked, spec)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range rep.Findings {
			if f.Code == CodeForeignSDNReach {
				got = append(got, f.Subject+" "+f.Path)
			}
		}
		if len(got) == 0 || !strings.Contains(strings.Join(got, ","), alpha+" /sdn/zones/pxa/pxa0102") {
			t.Errorf("SDN.Use granted on %s: ForeignSDNReach %v", grant.path, got)
		}
	}
}
