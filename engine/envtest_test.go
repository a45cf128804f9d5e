package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/internal/widget"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

func startAPIServer(t *testing.T) (*rest.Config, client.Client) {
	return testenv.StartAPIServer(t, testenv.APIServerOptions{Scheme: newScheme(), CRDPaths: []string{"testdata/crds"}})
}

// TestAPIServer runs the engine against one real kube-apiserver.
func TestAPIServer(t *testing.T) {
	cfg, c := startAPIServer(t)
	t.Run("Runner", func(t *testing.T) { testRunnerAPIServer(t, cfg, c) })
	t.Run("LeaderElection", func(t *testing.T) { testLeaderElection(t, cfg, c) })
}

// testRunnerAPIServer runs the finalizer-guarded mirror step, fed by
// informer events only (no periodic resync).
func testRunnerAPIServer(t *testing.T, cfg *rest.Config, c client.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var released sync.Map
	done := startWatched(t, ctx, cfg, c, releasableMirror(&released))
	for i := range 3 {
		if err := c.Create(ctx, widget.New(ns, fmt.Sprintf("w%d", i), "one")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "status of every widget mirrored with Ready=True and the finalizer stored", func() bool {
		for i := range 3 {
			w, ok := getWidget(t, c, fmt.Sprintf("w%d", i))
			if !ok || w.Status.Mirror != "one" || !hasFinalizer(w, fin) || w.Status.ObservedGeneration != w.Generation || !isReady(w) {
				return false
			}
		}
		return true
	})
	w, _ := getWidget(t, c, "w0")
	w.Spec.Value = "two"
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the spec change mirrored", func() bool {
		w, _ := getWidget(t, c, "w0")
		return w.Status.Mirror == "two" && w.Status.ObservedGeneration == w.Generation
	})
	if err := c.Delete(ctx, widget.New(ns, "w1", "")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if w, ok := getWidget(t, c, "w1"); !ok || !hasFinalizer(w, fin) {
		t.Fatal("w1 lost its finalizer before ReadyToClear allowed it")
	}
	released.Store("w1", true)
	waitFor(t, 20*time.Second, "w1 gone once released", func() bool {
		_, ok := getWidget(t, c, "w1")
		return !ok
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v", err)
	}
}

// releasableMirror mirrors spec into status behind the finalizer, which may
// go once the object's name is in released.
func releasableMirror(released *sync.Map) engine.Step[*widget.Widget] {
	return engine.WithFinalizer[*widget.Widget]{
		Finalizer:    fin,
		RecheckAfter: 200 * time.Millisecond,
		ReadyToClear: func(_ context.Context, s *engine.State[*widget.Widget]) (bool, error) {
			_, ok := released.Load(s.Object.Name)
			return ok, nil
		},
		Step: engine.StepFunc[*widget.Widget](func(ctx context.Context, s *engine.State[*widget.Widget]) (engine.Result, error) {
			s.Object.Status.Mirror = s.Object.Spec.Value
			s.Object.Status.ObservedGeneration = s.Object.Generation
			s.SetCondition(&s.Object.Status.Conditions, "Synced", metav1.ConditionTrue, "Mirrored", "")
			s.SetReady(&s.Object.Status.Conditions, "Synced")
			return engine.Result{}, nil
		}),
	}
}

// startWatched runs step over widgets with two workers, fed only by the
// events of a controller-runtime cache (no periodic resync).
func startWatched(t *testing.T, ctx context.Context, cfg *rest.Config, c client.Client, step engine.Step[*widget.Widget]) <-chan error {
	t.Helper()
	informers, err := cache.New(cfg, cache.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.NewRunner(c, newWidget, step, engine.WithWorkers(2), engine.WithResync(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Watch(ctx, informers, &widget.Widget{}, r, nil); err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return done
}

func isReady(w *widget.Widget) bool {
	for _, c := range w.Status.Conditions {
		if c.Type == engine.ConditionReady {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// elected is one replica: a runner whose step stamps its identity into status.
type elected struct {
	id    string
	count atomic.Int32
	done  chan error
	stop  context.CancelFunc
}

func startReplica(t *testing.T, cfg *rest.Config, c client.Client, id string, le engine.LeaderElection) *elected {
	t.Helper()
	e := &elected{id: id, done: make(chan error, 1)}
	step := engine.StepFunc[*widget.Widget](func(ctx context.Context, s *engine.State[*widget.Widget]) (engine.Result, error) {
		e.count.Add(1)
		s.Object.Status.Mirror = s.Object.Spec.Value
		s.Object.Status.ReconciledBy = id
		return engine.Result{}, nil
	})
	r, err := engine.NewRunner(c, newWidget, engine.Step[*widget.Widget](step), engine.WithName("widget-"+id), engine.WithResync(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	le.Lock, err = engine.NewLeaseLock(cs, ns, "widgets", id)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	go func() { e.done <- engine.RunElected(ctx, le, r) }()
	t.Cleanup(cancel)
	return e
}

func leaseHolder(t *testing.T, c client.Client) string {
	l := &coordinationv1.Lease{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "widgets"}, l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func allReconciledBy(t *testing.T, c client.Client, id string, n int) bool {
	for i := range n {
		w, ok := getWidget(t, c, fmt.Sprintf("e%d", i))
		if !ok || w.Status.ReconciledBy != id {
			return false
		}
	}
	return true
}

// testLeaderElection runs two replicas on one Lease: only the leader
// reconciles; when it is cancelled it releases the lease and the other takes
// over; a replica whose lease is taken stops within the renew deadline.
func testLeaderElection(t *testing.T, cfg *rest.Config, c client.Client) {
	le := engine.LeaderElection{LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: 500 * time.Millisecond}
	const n = 4
	for i := range n {
		if err := c.Create(context.Background(), widget.New(ns, fmt.Sprintf("e%d", i), "v")); err != nil {
			t.Fatal(err)
		}
	}
	a := startReplica(t, cfg, c, "a", le)
	waitFor(t, 20*time.Second, "a leading and reconciling everything", func() bool {
		return leaseHolder(t, c) == "a" && allReconciledBy(t, c, "a", n)
	})
	b := startReplica(t, cfg, c, "b", le)
	time.Sleep(2 * time.Second) // several resyncs of a, several retries of b
	if got := b.count.Load(); got != 0 {
		t.Fatalf("b reconciled %d times while a held the lease", got)
	}
	if !allReconciledBy(t, c, "a", n) || leaseHolder(t, c) != "a" {
		t.Fatal("a lost the lease or its objects without reason")
	}

	a.stop()
	select {
	case err := <-a.done:
		if err != nil {
			t.Errorf("RunElected(a) = %v after cancel, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunElected(a) did not return within 10s of cancel")
	}
	countA := a.count.Load()
	waitFor(t, 20*time.Second, "b taking over", func() bool {
		return leaseHolder(t, c) == "b" && allReconciledBy(t, c, "b", n)
	})
	if a.count.Load() != countA {
		t.Error("a reconciled after it stopped")
	}

	expectLeaseLossStops(t, c, b, le)
}

// expectLeaseLossStops hands the lease to someone else: e cannot renew and
// must stop within the renew deadline.
func expectLeaseLossStops(t *testing.T, c client.Client, e *elected, le engine.LeaderElection) {
	l := &coordinationv1.Lease{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "widgets"}, l); err != nil {
		t.Fatal(err)
	}
	intruder := "intruder"
	now := metav1.NewMicroTime(time.Now())
	l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.AcquireTime = &intruder, &now, &now
	if err := c.Update(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	select {
	case err := <-e.done:
		if !errors.Is(err, engine.ErrLeaderLost) {
			t.Errorf("RunElected(%s) = %v after losing the lease, want ErrLeaderLost", e.id, err)
		}
		if took := time.Since(taken); took > le.RenewDeadline+le.RetryPeriod+3*time.Second {
			t.Errorf("%s stopped %s after losing the lease; the renew deadline is %s", e.id, took, le.RenewDeadline)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("RunElected(%s) did not return within 10s of losing the lease", e.id)
	}
	count := e.count.Load()
	time.Sleep(time.Second)
	if e.count.Load() != count {
		t.Errorf("%s reconciled after losing the lease", e.id)
	}
}
