package sim

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeovnv1 "github.com/pxsubstrate/pxsubstrate/api/kubeovn/v1"
)

// NaiveAllocate is the allocation the controller's index replaces, kept
// for benchmarks that measure against it: it lists every Vlan through c,
// rebuilds the set of IDs used on provider and creates the Vlan name with
// the lowest free one. Its cost grows with the Vlans of the whole cluster.
func NaiveAllocate(ctx context.Context, c client.Client, provider, name string) error {
	var list kubeovnv1.VlanList
	if err := c.List(ctx, &list); err != nil {
		return fmt.Errorf("cannot list Kube-OVN Vlans: %w", err)
	}
	used := map[int]bool{}
	for _, v := range list.Items {
		if v.Spec.Provider == provider {
			used[v.Spec.ID] = true
		}
	}
	for vid := 1; vid <= 4094; vid++ {
		if !used[vid] {
			return c.Create(ctx, &kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeovnv1.VlanSpec{ID: vid, Provider: provider}})
		}
	}
	return fmt.Errorf("no free VLAN on provider network %s: all of 1-4094 are used", provider)
}
