package crdtest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
	setQuotaStatus(t, c, q)
	create := func(ns string, i int) error {
		return c.Create(ctx, &v1alpha1.ProxmoxNetwork{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("net-%d", i), Namespace: ns},
			Spec:       v1alpha1.ProxmoxNetworkSpec{Zone: "zone-a", Subnet: fmt.Sprintf("subnet-q%d", i), IPPool: fmt.Sprintf("pool-%d", i)},
		})
	}
	for i := range 2 {
		if err := createPastStaleQuota(ctx, func() error { return create("tenant-quota", i) }); err != nil {
			t.Fatalf("network %d of 2 is under the quota: %v", i, err)
		}
	}
	err := create("tenant-quota", 2)
	want := quotaExceeded(2, 2)
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

// quotaExceeded is the API server's refusal of one more network where the
// quota's status allows limit.
func quotaExceeded(used, limit int) string {
	r := string(quotaResource)
	return fmt.Sprintf("exceeded quota: proxmox-networks, requested: %s=1, used: %s=%d, limited: %s=%d", r, r, used, r, limit)
}

// setQuotaStatus writes q's status as kube-controller-manager's quota
// controller would, in two steps, so that no network is created while the
// API server's ResourceQuota admission still sees the quota without a
// status (it reads quotas from an informer, and a quota whose status has
// no hard limits restricts nothing: a create in that window would be
// admitted uncounted). First the status allows nothing, and a probe is
// created until the admission refuses it by that status (a probe admitted
// in the window is deleted); then the status takes spec.hard, and
// createPastStaleQuota retries a create the admission refuses by the
// previous status. From the probe's refusal on, a stale view can only
// refuse, never admit past the cap.
func setQuotaStatus(t *testing.T, c client.Client, q *corev1.ResourceQuota) {
	t.Helper()
	ctx := context.Background()
	zero := corev1.ResourceList{quotaResource: resource.MustParse("0")}
	q.Status = corev1.ResourceQuotaStatus{Hard: zero, Used: zero}
	if err := c.Status().Update(ctx, q); err != nil {
		t.Fatal(err)
	}
	probe := &v1alpha1.ProxmoxNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: q.Namespace},
		Spec:       v1alpha1.ProxmoxNetworkSpec{Zone: "zone-a", Subnet: "subnet-probe", IPPool: "pool-probe"},
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Create(ctx, probe.DeepCopy())
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), quotaExceeded(0, 0)) {
			break
		}
		if err != nil {
			t.Fatalf("probe under a quota of 0: %v", err)
		}
		if err := c.Delete(ctx, probe); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the API server's quota admission never saw the quota's status")
		}
		time.Sleep(20 * time.Millisecond)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: zero}
	if err := c.Status().Update(ctx, q); err != nil {
		t.Fatal(err)
	}
}

// createPastStaleQuota runs create until the quota admission no longer
// refuses it by the quota's previous status (which allowed nothing).
func createPastStaleQuota(ctx context.Context, create func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := create()
		if err == nil || !strings.Contains(err.Error(), quotaExceeded(0, 0)) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
