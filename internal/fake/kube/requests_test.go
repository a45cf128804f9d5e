package kube_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
)

// TestRequests counts calls by verb and kind, refused ones included, and
// tells writes from reads.
func TestRequests(t *testing.T) {
	ctx := context.Background()
	reqs := kube.NewRequests()
	c := kube.NewClient(kube.ClientOptions{Hooks: reqs.Funcs(), WithStatus: []client.Object{&corev1.Pod{}}})
	if err := c.Create(ctx, cm("a")); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, cm("a")); err == nil {
		t.Fatal("a second create of the same name must fail")
	}
	got := cm("a")
	if err := c.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(got.DeepCopy())
	got.Data["k"] = "w"
	if err := c.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: cm("p").ObjectMeta}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	want := map[kube.RequestKey]int{
		{Verb: kube.VerbCreate, Kind: "ConfigMap"}: 2,
		{Verb: kube.VerbGet, Kind: "ConfigMap"}:    1,
		{Verb: kube.VerbPatch, Kind: "ConfigMap"}:  1,
		{Verb: kube.VerbList, Kind: "ConfigMap"}:   1,
		{Verb: kube.VerbCreate, Kind: "Pod"}:       1,
		{Verb: kube.VerbStatusUpdate, Kind: "Pod"}: 1,
		{Verb: kube.VerbDelete, Kind: "Pod"}:       1,
	}
	if diff := cmp.Diff(want, reqs.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if w := reqs.Writes(); w != 6 {
		t.Errorf("Writes() = %d, want 6 (two creates of the ConfigMap, its patch, the Pod's create, status update and delete)", w)
	}
	if table := reqs.Table(); len(table) < 6 || table[:6] != "create" {
		t.Errorf("Table() starts with %q, want the create rows first", table)
	}
	reqs.Reset()
	if n := len(reqs.Counts()); n != 0 {
		t.Errorf("after Reset, %d counts remain", n)
	}
}
