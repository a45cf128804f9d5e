package demo

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/admission"
	pmv1alpha1 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha1"
)

// machineOn is a ProxmoxMachine whose default NIC sits on the zone bridge
// with a VLAN and the address pool of a network.
func machineOn(name string, vlan int, pool string) string {
	return fmt.Sprintf(`{"apiVersion":%q,"kind":"ProxmoxMachine","metadata":{"name":%q,"namespace":%q},
"spec":{"network":{"default":{"bridge":"vmbr1","vlan":%d,
"ipv4PoolRef":{"apiGroup":"ipam.cluster.x-k8s.io","kind":"InClusterIPPool","name":%q}}}}}`,
		pmv1alpha1.GroupVersion.String(), name, TenantAlpha, vlan, pool)
}

var actAdmission = Act{
	Name: "tenant alpha's machines: one on beta's VLAN is refused, one on its own is admitted",
	Play: func(ctx context.Context, s *Stage) error {
		v, err := demoValidator()
		if err != nil {
			return err
		}
		ns := &corev1.Namespace{}
		if err := s.H.Store().Get(ctx, client.ObjectKey{Name: TenantAlpha}, ns); err != nil {
			return fmt.Errorf("cannot read namespace %s: %w", TenantAlpha, err)
		}
		cases := []struct {
			name, pool string
			vlan       int
			allow      bool
		}{
			{"steals-beta", "subnet-b1", 3904, false},
			{"worker-a1", "subnet-a1", 3901, true},
		}
		holds, detail := true, ""
		s.Table([]string{"MACHINE", "NIC", "ADMITTED", "POLICY", "MESSAGE"}, func(row func(...any)) {
			for _, c := range cases {
				d, err := v.Review(admission.Request{Operation: "CREATE", Namespace: TenantAlpha,
					Kind:   metav1.GroupVersionKind{Group: pmv1alpha1.GroupVersion.Group, Version: pmv1alpha1.GroupVersion.Version, Kind: "ProxmoxMachine"},
					Object: []byte(machineOn(c.name, c.vlan, c.pool))}, admission.FromCore(ns))
				if err != nil {
					holds, detail = false, fmt.Sprintf("%s: cannot review: %v", c.name, err)
					continue
				}
				if d.Allowed != c.allow {
					holds, detail = false, fmt.Sprintf("%s: admitted=%v, want %v", c.name, d.Allowed, c.allow)
				}
				row(c.name, fmt.Sprintf("vmbr1/%d/%s", c.vlan, c.pool), d.Allowed, orDash(d.Policy), orDash(d.Message))
			}
		})
		s.Check(CheckAdmission, holds, detail)
		return nil
	},
}
