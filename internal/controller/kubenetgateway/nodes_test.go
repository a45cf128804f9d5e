package kubenetgateway_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubenetgateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
)

func TestChangedProviders(t *testing.T) {
	providers := []string{"pa", "pb"}
	meta := func(ready []string, chassis string, deleting bool) metav1.Object {
		m := &metav1.ObjectMeta{Name: "n1", Labels: map[string]string{}, Annotations: map[string]string{}}
		for _, p := range ready {
			m.Labels[kubegateway.ReadyLabel(p)] = "true"
		}
		if chassis != "" {
			m.Annotations[kubegateway.ChassisAnnotation] = chassis
		}
		if deleting {
			now := metav1.Now()
			m.DeletionTimestamp = &now
		}
		return m
	}
	cases := map[string]struct {
		reason   string
		old, upd metav1.Object
		want     []string
	}{
		"AddReady":       {reason: "A new Node concerns the providers it is ready on.", upd: meta([]string{"pb"}, "c", false), want: []string{"pb"}},
		"AddNotReady":    {reason: "A new Node ready nowhere concerns no provider.", upd: meta(nil, "c", false)},
		"DeleteReady":    {reason: "A deleted Node concerns the providers it was ready on.", old: meta([]string{"pa", "pb"}, "c", false), want: []string{"pa", "pb"}},
		"Heartbeat":      {reason: "An update that changes neither label, chassis nor deletion concerns nobody.", old: meta([]string{"pa"}, "c", false), upd: meta([]string{"pa"}, "c", false)},
		"ChassisChanged": {reason: "A new chassis concerns every provider.", old: meta([]string{"pa"}, "c", false), upd: meta([]string{"pa"}, "d", false), want: []string{"pa", "pb"}},
		"BecameReady":    {reason: "A ready label that appears concerns its provider only.", old: meta(nil, "c", false), upd: meta([]string{"pa"}, "c", false), want: []string{"pa"}},
		"Deleting":       {reason: "A Node that starts deleting concerns every provider.", old: meta([]string{"pa"}, "c", false), upd: meta([]string{"pa"}, "c", true), want: []string{"pa", "pb"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := kubenetgateway.ChangedProviders(providers, tc.old, tc.upd)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nChangedProviders: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
