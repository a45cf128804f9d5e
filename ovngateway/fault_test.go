package ovngateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// fleet is a set of networks and the GatewayReady condition each carries,
// driven the way a controller drives them: a pass, the grace tracker, then
// the condition.
type fleet struct {
	c     *ovngateway.Client
	grace *kubegateway.Grace
	gws   []ovngateway.Gateway
	conds map[string][]metav1.Condition
}

// pass reconciles networks [from, to) and records their conditions.
func (f *fleet) pass(from, to int) (failed int) {
	for _, gw := range f.gws[from:to] {
		o, err := f.c.Reconcile(context.Background(), gw)
		if err != nil {
			failed++
		}
		if cond, ok := kubegateway.Condition(o, err, f.grace.Observe(gw.ID(), err)); ok {
			conds := f.conds[gw.ID()]
			meta.SetStatusCondition(&conds, cond)
			f.conds[gw.ID()] = conds
		}
	}
	return failed
}

// reasons counts the GatewayReady reasons over the fleet ("" for none).
func (f *fleet) reasons() map[string]int {
	out := map[string]int{}
	for _, gw := range f.gws {
		reason := ""
		if c := meta.FindStatusCondition(f.conds[gw.ID()], kubegateway.ConditionGatewayReady); c != nil {
			reason = string(c.Status) + "/" + c.Reason
		}
		out[reason]++
	}
	return out
}

// TestKillNB kills the real ovsdb-server with SIGKILL in the middle of a run
// and starts it again: networks that were up stay up through the grace,
// NBUnavailable appears only once it has expired, and every network
// converges after the restart.
func TestKillNB(t *testing.T) {
	const n = 20
	s := ovngatewaytest.StartReal(t)
	admin := ovngatewaytest.Connect(t, s.Endpoint())
	f := &fleet{c: dial(t, s.Endpoint()), conds: map[string][]metav1.Condition{}}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f.grace = kubegateway.NewGrace(clk, ovngateway.NBGrace)
	want := ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{}, Ports: map[string]ovngatewaytest.Port{}}
	for i := range n {
		subnet := fmt.Sprintf("sub%d", i)
		port := ovngateway.RouterPortName("vpc1", subnet)
		ovngatewaytest.AddRouterPort(t, admin, "vpc1", port)
		gw := gateway(t, "tenant-a", fmt.Sprintf("net%d", i), "vpc1", subnet, threeNodes...)
		f.gws = append(f.gws, gw)
		want.Groups[gw.Group()] = wantGroup(gw, nil)
		want.Ports[port] = ovngatewaytest.Port{Group: gw.Group()}
	}

	if err := f.c.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if failed := f.pass(0, n/2); failed != 0 {
		t.Fatalf("%d passes failed before the kill", failed)
	}
	s.Kill()
	// The client learns of the lost connection asynchronously; until it
	// does, an up-to-date network is answered from the cache. Wait for that
	// before judging conditions, without recording any.
	waitUntil := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := f.c.Reconcile(ctx, f.gws[0])
		cancel()
		if err != nil {
			break
		}
		if time.Now().After(waitUntil) {
			t.Fatal("the client never noticed the killed ovsdb-server")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if failed := f.pass(n/2, n); failed != n/2 {
		t.Fatalf("with the NB killed, %d of %d passes failed", failed, n/2)
	}
	f.pass(0, n)
	if diff := cmp.Diff(map[string]int{"True/ChassisAssigned": n / 2, "": n / 2}, f.reasons()); diff != "" {
		t.Errorf("right after the kill, networks keep their conditions: -want +got:\n%s", diff)
	}
	clk.SetTime(clk.Now().Add(ovngateway.NBGrace))
	f.pass(0, n)
	if diff := cmp.Diff(map[string]int{"True/ChassisAssigned": n / 2, "": n / 2}, f.reasons()); diff != "" {
		t.Errorf("at the end of the grace nothing changes yet: -want +got:\n%s", diff)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	f.pass(0, n)
	if diff := cmp.Diff(map[string]int{"False/NBUnavailable": n}, f.reasons()); diff != "" {
		t.Errorf("past the grace every network is NBUnavailable: -want +got:\n%s", diff)
	}

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for f.pass(0, n) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the networks did not converge within 30s of the restart: %v", f.reasons())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if diff := cmp.Diff(map[string]int{"True/ChassisAssigned": n}, f.reasons()); diff != "" {
		t.Errorf("after the restart every network is up again: -want +got:\n%s", diff)
	}
	admin = ovngatewaytest.Connect(t, s.Endpoint())
	wantRows(t, admin, want, "rows after the restart")
	before := f.c.Transactions()
	if failed := f.pass(0, n); failed != 0 || f.c.Transactions() != before {
		t.Errorf("a converged pass must send nothing: %d failed, %d transactions", failed, f.c.Transactions()-before)
	}
}
