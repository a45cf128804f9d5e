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
func machineOn(name string, nic admission.Triple) string {
	return fmt.Sprintf(`{"apiVersion":%q,"kind":"ProxmoxMachine","metadata":{"name":%q,"namespace":%q},
"spec":{"network":{"default":{"bridge":%q,"vlan":%d,
"ipv4PoolRef":{"apiGroup":"ipam.cluster.x-k8s.io","kind":"InClusterIPPool","name":%q}}}}}`,
		pmv1alpha1.GroupVersion.String(), name, TenantAlpha, nic.Bridge, nic.VLAN, nic.Pool)
}

var actAdmission = Act{
	Name: "tenant alpha's machines: one on beta's VLAN is refused, one on its own is admitted",
	Play: func(ctx context.Context, s *Stage) error {
		v, err := demoValidator()
		if err != nil {
			return err
		}
		alpha, own, err := s.firstNetwork(ctx, TenantAlpha)
		if err != nil {
			return err
		}
		_, foreign, err := s.firstNetwork(ctx, TenantBeta)
		if err != nil {
			return err
		}
		cases := []struct {
			name  string
			nic   admission.Triple
			allow bool
		}{
			{"steals-beta", foreign, false},
			{"worker-a1", own, true},
		}
		holds, detail := true, ""
		s.Table([]string{"MACHINE", "NIC", "ADMITTED", "POLICY", "MESSAGE"}, func(row func(...any)) {
			for _, c := range cases {
				d, err := v.Review(admission.Request{Operation: "CREATE", Namespace: TenantAlpha,
					Kind:   metav1.GroupVersionKind{Group: pmv1alpha1.GroupVersion.Group, Version: pmv1alpha1.GroupVersion.Version, Kind: "ProxmoxMachine"},
					Object: []byte(machineOn(c.name, c.nic))}, alpha)
				if err != nil {
					holds, detail = false, fmt.Sprintf("%s: cannot review: %v", c.name, err)
					continue
				}
				if d.Allowed != c.allow {
					holds, detail = false, fmt.Sprintf("%s: admitted=%v, want %v", c.name, d.Allowed, c.allow)
				}
				row(c.name, c.nic.String(), d.Allowed, orDash(d.Policy), orDash(d.Message))
			}
		})
		s.Check(CheckAdmission, holds, detail)
		return nil
	},
}

// firstNetwork reads a namespace as the controller annotated it and the
// first bridge/VLAN triple its annotation lists (a <vnet>/<pool> entry is
// the same network by its VNet).
func (s *Stage) firstNetwork(ctx context.Context, name string) (*admission.Namespace, admission.Triple, error) {
	ns := &corev1.Namespace{}
	if err := s.H.Store().Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return nil, admission.Triple{}, fmt.Errorf("cannot read namespace %s: %w", name, err)
	}
	ts, err := admission.ParseTriples(ns.Annotations[admission.AnnotationProxmoxNetworks])
	if err != nil {
		return nil, admission.Triple{}, fmt.Errorf("cannot read the networks of namespace %s: %w", name, err)
	}
	for _, t := range ts {
		if t.VNet == "" {
			return admission.FromCore(ns), t, nil
		}
	}
	return nil, admission.Triple{}, fmt.Errorf("namespace %s has no network yet: play the network acts first", name)
}
