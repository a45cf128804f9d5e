package audit

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// TestVMIDRanges: with ranges on both tenants, a tenant VM outside its
// range and a foreign VM inside it are named; the converged control with
// every VM inside its tenant's range has neither finding.
func TestVMIDRanges(t *testing.T) {
	spec := exampleSpec(t)
	spec.Tenants[0].VMIDRange = &tenantplan.VMIDRange{Start: 100, End: 1999}
	spec.Tenants[1].VMIDRange = &tenantplan.VMIDRange{Start: 2000, End: 2999}
	cfg := converged(t, spec)
	rep, err := Run(cfg, spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Code == CodeVMOutsideRange || f.Code == CodeForeignVMInRange {
			t.Fatalf("the control (every VM in its tenant's range) has no range finding: %+v", f)
		}
	}
	p := cfg.Pools[spec.Tenants[0].Pool]
	p.AddVM(2500) // alpha's VM in beta's range
	cfg.Pools[spec.Tenants[0].Pool] = p
	cfg.Resources.VMs = append(cfg.Resources.VMs, 1500, 2500) // 1500 in no pool, inside alpha's range
	rep, err = Run(cfg, spec)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Findings {
		if f.Code == CodeVMOutsideRange || f.Code == CodeForeignVMInRange {
			got = append(got, string(f.Code)+" "+f.Tenant+" "+f.Path+": "+f.Message)
		}
	}
	a, b := spec.Tenants[0], spec.Tenants[1]
	want := []string{
		"ForeignVMInRange " + a.Name + " /vms/1500: VM 1500, in no pool, is inside tenant " + a.Name + "'s vmIDRange 100-1999",
		"ForeignVMInRange " + b.Name + " /vms/2500: VM 2500, of tenant " + a.Name + ", is inside tenant " + b.Name + "'s vmIDRange 2000-2999",
		"VMOutsideRange " + a.Name + " /vms/2500: VM 2500 of tenant " + a.Name + "'s pool " + a.Pool + " is outside its vmIDRange 100-1999",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("range findings (-want +got):\n%s", diff)
	}
}
