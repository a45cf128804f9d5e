package network_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
)

// writeBudget lets the controller's first n writes through and then fails
// every write, as a process that died right after its n-th write would
// leave the world. n < 0 means no limit.
type writeBudget struct {
	mu      sync.Mutex
	n, done int
	crashed bool
}

var errCrashed = errors.New("the controller process is gone")

func (b *writeBudget) allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n >= 0 && b.done >= b.n {
		b.crashed = true
		return false
	}
	b.done++
	return true
}

func (b *writeBudget) funcs() interceptor.Funcs {
	gate := func(do func() error) error {
		if !b.allow() {
			return apierrors.NewServiceUnavailable(errCrashed.Error())
		}
		return do()
	}
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			return gate(func() error { return c.Create(ctx, o, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			return gate(func() error { return c.Update(ctx, o, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			return gate(func() error { return c.Patch(ctx, o, p, opts...) })
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			return gate(func() error { return c.Delete(ctx, o, opts...) })
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			return gate(func() error { return c.SubResource(sub).Update(ctx, o, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			return gate(func() error { return c.SubResource(sub).Patch(ctx, o, p, opts...) })
		},
	}
}

// outcome is the end state that matters: which networks, Vlans and claims
// exist, and which VLAN each network holds.
type outcome struct {
	Networks map[string]int32
	Vlans    map[string]int
	Claims   []string
	Subnets  []string
}

func outcomeOf(t tb, c client.Client) outcome {
	s := read(t, c)
	o := outcome{Networks: map[string]int32{}, Vlans: map[string]int{}}
	for k, n := range s.networks {
		o.Networks[k.String()] = n.Status.VLAN
	}
	for _, v := range s.vlans {
		o.Vlans[v.Name] = v.Spec.ID
	}
	for _, c := range s.claims {
		o.Claims = append(o.Claims, c.Name)
	}
	for name := range s.subnets {
		o.Subnets = append(o.Subnets, name)
	}
	sort.Strings(o.Claims)
	sort.Strings(o.Subnets)
	return o
}

// crashLifecycle runs a full lifecycle: two networks on a zone of one VLAN
// (the second waits, exhausted), an address that holds the first one after
// its uninstall, the address's release, the second network taking the freed
// VLAN, and its own uninstall. budget limits the controller's writes; when
// it runs out, the controller is dropped at the end of that phase, a fresh
// one starts, and the lifecycle goes on.
func crashLifecycle(t *testing.T, n int) (outcome, int) {
	t.Helper()
	ctx := context.Background()
	budget := &writeBudget{n: n}
	hooks := budget.funcs()
	h := sim.NewHarness(sim.Options{ControllerHooks: &hooks})
	c := h.Client()
	baseWorld(t, c, map[string][]string{"zone-a": {"100"}})
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	addr := sim.IPAddress(netID(0).ns(), "vm-0", netID(0).name(), "10.10.0.70", 24)
	phases := []func(){
		func() { createNetwork(t, c, 0, "zone-a"); createNetwork(t, c, 1, "zone-a") },
		func() { mustCreate(t, c, addr.DeepCopy()); uninstall(t, c, 0) },
		func() {
			if err := c.Delete(ctx, addr.DeepCopy()); err != nil {
				t.Fatal(err)
			}
		},
		func() { createNetwork(t, c, 2, "zone-a") },
		func() { uninstall(t, c, 1) },
	}
	for i, phase := range phases {
		phase()
		if _, err := h.Converge(ctx); err != nil {
			t.Fatalf("phase %d: %v", i, err)
		}
		budget.mu.Lock()
		crashed := budget.crashed
		if crashed {
			budget.n, budget.crashed = -1, false
		}
		budget.mu.Unlock()
		if crashed {
			if err := h.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Advance(ctx, time.Minute); err != nil {
				t.Fatalf("phase %d after the crash: %v", i, err)
			}
		}
		checkUniqueIDs(t, read(t, c))
	}
	if _, err := h.Advance(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	checkZoneCounts(t, read(t, c))
	return outcomeOf(t, c), budget.done
}

// TestCrashPoints stops the controller after each of its API writes in a
// full lifecycle, restarts it with nothing in memory, and requires the same
// end state as a run without a crash: nothing leaked, nothing lost.
func TestCrashPoints(t *testing.T) {
	t.Parallel()
	want, writes := crashLifecycle(t, -1)
	if diff := cmp.Diff(outcome{
		Networks: map[string]int32{"tenant-2/s-2": 100},
		Vlans:    map[string]int{"s-2": 100},
		Claims:   []string{"pxtenant.100"},
		Subnets:  []string{"s-2"},
	}, want); diff != "" {
		t.Fatalf("the lifecycle without a crash ends wrong: -want +got:\n%s", diff)
	}
	if writes < 10 {
		t.Fatalf("the lifecycle made only %d writes", writes)
	}
	for k := 1; k <= writes; k++ {
		t.Run(fmt.Sprintf("after-write-%d", k), func(t *testing.T) {
			t.Parallel()
			got, _ := crashLifecycle(t, k)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("crash after write %d of %d: -want +got:\n%s", k, writes, diff)
			}
		})
	}
}
