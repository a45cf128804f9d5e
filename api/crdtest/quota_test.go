package crdtest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
)

// quotaResource is the object count a ResourceQuota caps ProxmoxNetworks by.
const quotaResource = corev1.ResourceName("count/proxmoxnetworks.proxmox.cozystack.io")

// testNetworkQuota: a ResourceQuota on count/proxmoxnetworks.proxmox.cozystack.io
// in a tenant's namespace makes the API server refuse the network past the
// cap (the Kubernetes way to keep one tenant from taking a shared zone),
// while the networks under it and another namespace's are admitted. The
// test writes the quota's status as kube-controller-manager's quota
// controller would (hard from spec, used counted); the API server's
// ResourceQuota admission does the rest.
func testNetworkQuota(t *testing.T, c client.Client) {
	ctx := context.Background()
	for _, ns := range []string{"tenant-quota", "tenant-free"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "proxmox-networks", Namespace: "tenant-quota"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{quotaResource: resource.MustParse("2")}},
	}
	if err := c.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{quotaResource: resource.MustParse("0")}}
	if err := c.Status().Update(ctx, q); err != nil {
		t.Fatal(err)
	}
	create := func(ns string, i int) error {
		return c.Create(ctx, &v1alpha1.ProxmoxNetwork{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("net-%d", i), Namespace: ns},
			Spec:       v1alpha1.ProxmoxNetworkSpec{Zone: "zone-a", Subnet: fmt.Sprintf("subnet-q%d", i), IPPool: fmt.Sprintf("pool-%d", i)},
		})
	}
	for i := range 2 {
		if err := create("tenant-quota", i); err != nil {
			t.Fatalf("network %d of 2 is under the quota: %v", i, err)
		}
	}
	err := create("tenant-quota", 2)
	want := "exceeded quota: proxmox-networks, requested: " + string(quotaResource) + "=1, used: " + string(quotaResource) + "=2, limited: " + string(quotaResource) + "=2"
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("the third network is refused by the quota: %v", err)
	}
	if err := create("tenant-free", 2); err != nil {
		t.Errorf("a namespace without the quota is not capped: %v", err)
	}
	var got corev1.ResourceQuota
	if err := c.Get(ctx, client.ObjectKeyFromObject(q), &got); err != nil {
		t.Fatal(err)
	}
	if used := got.Status.Used[quotaResource]; used.Value() != 2 {
		t.Errorf("the quota counts %s used, want 2", used.String())
	}
}
