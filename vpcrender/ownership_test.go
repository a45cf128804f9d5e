package vpcrender

import (
	"testing"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// TestSubnetCarriesTenant checks that every rendered Subnet carries the
// tenant label the network controller proves ownership with, spelled as
// the controller reads it.
func TestSubnetCarriesTenant(t *testing.T) {
	if LabelTenantName != v1alpha1.LabelTenantName {
		t.Fatalf("vpcrender writes %q, the controller reads %q", LabelTenantName, v1alpha1.LabelTenantName)
	}
	spec := loadSpec(t, "testdata/mixed.yaml")
	r, err := Render(spec)
	if err != nil {
		t.Fatal(err)
	}
	subnets := 0
	for _, o := range r.Objects {
		if s, ok := o.(*kubeovnv1.Subnet); ok {
			subnets++
			if got := s.Labels[v1alpha1.LabelTenantName]; got != spec.Namespace {
				t.Errorf("Subnet %s: label %s = %q, want the tenant namespace %q", s.Name, v1alpha1.LabelTenantName, got, spec.Namespace)
			}
		}
	}
	if subnets == 0 {
		t.Fatal("testdata/mixed.yaml renders no Subnet")
	}
}
