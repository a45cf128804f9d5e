// Command enginestep writes a custom engine step and runs it with an
// engine.Runner over controller-runtime's fake client, without a cluster.
//
// The step hands out VLANs to ConfigMaps labelled vlan-request=true, from
// a vlanalloc zone, and writes the ID into the ConfigMap's data. It is
// composed as engine.Sequence{validate, engine.WithFinalizer{allocate}}:
// a ConfigMap without data.network is refused for good (engine.Terminal),
// and a deleted ConfigMap keeps its finalizer until its VLAN is back in
// the zone.
//
//	go run ./examples/enginestep
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

type cm = *corev1.ConfigMap

// Finalizer holds a ConfigMap until its VLAN is released.
const Finalizer = "example.com/vlan"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "enginestep:", err)
		os.Exit(1)
	}
}

// request is a ConfigMap asking for a VLAN for network.
func request(name, network string) *corev1.ConfigMap {
	data := map[string]string{}
	if network != "" {
		data["network"] = network
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name,
		Labels: map[string]string{"vlan-request": "true"}}, Data: data}
}

func run() error {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		request("web", "web"), request("db", "db"), request("broken", ""),
	).Build()
	zone, err := vlanalloc.NewZone(vlanalloc.ZoneSpec{Name: "zone-a", ProviderNetwork: "pxtenant", Ranges: []string{"200-201"}})
	if err != nil {
		return err
	}
	a := &allocator{index: vlanalloc.NewIndex(zone, nil, nil), waiting: map[engine.Key]bool{}}
	step := engine.Sequence[cm]{
		engine.StepFunc[cm](validate),
		engine.WithFinalizer[cm]{Finalizer: Finalizer, ReadyToClear: a.release, Step: engine.StepFunc[cm](a.allocate)},
	}
	r, err := engine.NewRunner(c, func() cm { return &corev1.ConfigMap{} }, engine.Step[cm](step), engine.WithName("vlan-requests"))
	if err != nil {
		return err
	}
	a.wake = r.Enqueue
	converge := func(title string) error {
		if err := r.Resync(ctx); err != nil {
			return err
		}
		if _, err := r.Drain(ctx, 100); err != nil {
			return err
		}
		return show(ctx, c, title)
	}
	if err := converge("after the first pass:"); err != nil {
		return err
	}
	if err := c.Create(ctx, request("cache", "cache")); err != nil {
		return err
	}
	if err := converge("cache arrives while the zone is full:"); err != nil {
		return err
	}
	if err := c.Delete(ctx, request("web", "")); err != nil {
		return err
	}
	return converge("web is deleted; its VLAN goes to cache:")
}

// validate refuses, for good, a request that names no network.
func validate(_ context.Context, s *engine.State[cm]) (engine.Result, error) {
	if s.Object.Labels["vlan-request"] != "true" {
		return engine.Result{}, engine.ErrHalt
	}
	if s.Object.Data["network"] == "" && s.Object.DeletionTimestamp.IsZero() {
		return engine.Result{}, engine.Terminal(errors.New("data.network is empty; name the network the VLAN is for"))
	}
	return engine.Result{}, nil
}

// allocator is the custom step's state: one zone's index, and the
// requests waiting for a free VLAN, woken when one is released.
type allocator struct {
	index   *vlanalloc.Index
	waiting map[engine.Key]bool
	wake    func(engine.Key)
}

func claimOf(o cm) vlanalloc.Claim {
	return vlanalloc.Claim{Network: vlanalloc.NetworkRef{Namespace: o.Namespace, Name: o.Name}, Vlan: o.Data["network"]}
}

// allocate gives a live request its VLAN (the lowest free, or the one it
// holds) and writes it into the ConfigMap; a full zone is retried later.
func (a *allocator) allocate(ctx context.Context, s *engine.State[cm]) (engine.Result, error) {
	vid, err := a.index.Allocate(claimOf(s.Object))
	if errors.Is(err, vlanalloc.ErrExhausted) {
		a.waiting[client.ObjectKeyFromObject(s.Object)] = true
		return engine.Result{RequeueAfter: 30 * time.Second}, nil
	}
	delete(a.waiting, client.ObjectKeyFromObject(s.Object))
	if err != nil {
		return engine.Result{}, err
	}
	if s.Object.Data["vlan"] == strconv.Itoa(vid) {
		return engine.Result{}, nil
	}
	patch := client.MergeFrom(s.Object.DeepCopy())
	s.Object.Data["vlan"] = strconv.Itoa(vid)
	if err := s.Client.Patch(ctx, s.Object, patch); err != nil {
		return engine.Result{}, fmt.Errorf("cannot record VLAN %d on %s: %w", vid, s.Object.Name, err)
	}
	return engine.Result{}, nil
}

// release gives the request's VLAN back to the zone; then the finalizer
// may go.
func (a *allocator) release(_ context.Context, s *engine.State[cm]) (bool, error) {
	if len(a.index.Release(claimOf(s.Object).Network)) > 0 {
		for k := range a.waiting {
			a.wake(k)
		}
	}
	return true, nil
}

func show(ctx context.Context, c client.Client, title string) error {
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list); err != nil {
		return err
	}
	fmt.Println(title)
	for _, o := range list.Items {
		vlan := o.Data["vlan"]
		if vlan == "" {
			vlan = "none"
		}
		fmt.Printf("  %s: vlan %s, finalizers %v\n", o.Name, vlan, o.Finalizers)
	}
	return nil
}
