//go:build linux

package ovnlab_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	ovsclient "github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/ovnlab"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
)

// faultKills is how many times each TestFault sweep kills the leader. CI
// runs 3; the figures in docs/ovngateway.md come from -fault-kills=10.
var faultKills = flag.Int("fault-kills", 3, "leader kills per TestFault sweep (docs/ovngateway.md: 10)")

// Sizes and bounds of the fault world.
const (
	faultNetworks = 1000
	faultVPCs     = 50
	// faultDeadline is the generous bound of every recovery; the figures
	// are reported, not asserted.
	faultDeadline = 2 * time.Minute
)

// faultWorld is a three-member NB cluster holding faultNetworks router
// ports on faultVPCs routers plus a router, port and group of another
// owner, and the gateway client of the controller given every member's
// endpoint (leader-only), with the controller's default connection timing.
type faultWorld struct {
	nb  *ovnlab.NBCluster
	c   *ovngateway.Client
	gws []ovngateway.Gateway
	// foreign is every row the client must never write, as seeded.
	foreign ovngatewaytest.Rows
}

func newFaultWorld(t *testing.T) *faultWorld {
	t.Helper()
	w := &faultWorld{nb: ovnlab.NewNBCluster(t, 3)}
	w.seed(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ovngateway.Dial(ctx, ovngateway.Config{Address: w.nb.Address()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	w.c = c
	return w
}

// seed creates the router ports as Kube-OVN does, and the foreign rows.
func (w *faultWorld) seed(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	admin := w.admin(t)
	defer admin.C.Close()
	cands := []ovngateway.Candidate{{Node: "node-1", Chassis: "ch-1"}, {Node: "node-2", Chassis: "ch-2"}, {Node: "node-3", Chassis: "ch-3"}}
	ports := map[string][]string{}
	w.gws = nil
	for i := range faultNetworks {
		vpc := fmt.Sprintf("vpc%d", i%faultVPCs)
		port := ovngateway.RouterPortName(vpc, fmt.Sprintf("sub%d", i))
		ports[vpc] = append(ports[vpc], port)
		gw, err := ovngateway.NewGateway(ovngateway.Network{Namespace: "tenant", Name: fmt.Sprintf("net%d", i), RouterPort: port}, vpc, "pxtenant", cands)
		if err != nil {
			t.Fatal(err)
		}
		w.gws = append(w.gws, gw)
	}
	for _, vpc := range slices.Sorted(maps.Keys(ports)) {
		if _, err := admin.AddRouterPorts(ctx, vpc, ports[vpc]...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.AddRouterPort(ctx, "foreign-router", "foreign-port"); err != nil {
		t.Fatal(err)
	}
	g, err := admin.AddGroup(ctx, "foreign-group", map[string]string{"owner": "someone-else"}, ovngatewaytest.Chassis{Name: "ch-x", Priority: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.SetPortGroup(ctx, "foreign-port", g); err != nil {
		t.Fatal(err)
	}
	rows, err := admin.ReadRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.foreign = foreignRows(rows)
}

// admin connects a full-model client to the cluster's leader; the caller
// closes it.
func (w *faultWorld) admin(t *testing.T) ovngatewaytest.Admin {
	t.Helper()
	opts := []ovsclient.Option{ovsclient.WithLeaderOnly(true)}
	for _, m := range w.nb.Members[1:] {
		opts = append(opts, ovsclient.WithEndpoint(m.Endpoint()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), faultDeadline)
	defer cancel()
	for {
		c, err := ovngatewaytest.Dial(ctx, w.nb.Members[0].Endpoint(), opts...)
		if err == nil {
			return ovngatewaytest.Admin{C: c}
		}
		if ctx.Err() != nil {
			t.Fatalf("no NB leader to read from: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// foreignRows is every row of r the gateway client must leave alone: all
// routers, every port without its ha_chassis_group column (the one column
// the client writes), and the groups and HA_Chassis not owned by it.
func foreignRows(r ovngatewaytest.Rows) ovngatewaytest.Rows {
	out := ovngatewaytest.Rows{Routers: r.Routers, GatewayChassis: r.GatewayChassis}
	ours := map[string]bool{}
	for _, g := range r.Groups {
		if g.ExternalIDs[ovngateway.OwnerKey] == ovngateway.OwnerValue {
			for _, h := range g.HaChassis {
				ours[h] = true
			}
			continue
		}
		out.Groups = append(out.Groups, g)
	}
	for _, h := range r.Chassis {
		if !ours[h.UUID] {
			out.Chassis = append(out.Chassis, h)
		}
	}
	for _, p := range r.Ports {
		if p.HaChassisGroup != nil && p.Name != "foreign-port" {
			p.HaChassisGroup = nil
		}
		out.Ports = append(out.Ports, p)
	}
	byUUID(out.Routers, func(r nbmodel.LogicalRouter) string { return r.UUID })
	byUUID(out.Ports, func(p nbmodel.LogicalRouterPort) string { return p.UUID })
	byUUID(out.Groups, func(g nbmodel.HAChassisGroup) string { return g.UUID })
	byUUID(out.Chassis, func(h nbmodel.HAChassis) string { return h.UUID })
	byUUID(out.GatewayChassis, func(g nbmodel.GatewayChassis) string { return g.UUID })
	for _, r := range out.Routers {
		slices.Sort(r.Ports)
	}
	return out
}

// byUUID sorts rows by their UUID, so that two reads compare equal
// whatever order the server answered in.
func byUUID[T any](rows []T, uuid func(T) string) {
	slices.SortFunc(rows, func(a, b T) int { return strings.Compare(uuid(a), uuid(b)) })
}

// reset removes every group of ours, as if the networks had never had a
// gateway, and waits until the client's cache has seen it.
func (w *faultWorld) reset(t *testing.T) {
	t.Helper()
	admin := w.admin(t)
	defer admin.C.Close()
	ctx := context.Background()
	rows, err := admin.ReadRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ops []ovsdb.Operation
	for _, p := range rows.Ports {
		if p.HaChassisGroup != nil && p.Name != "foreign-port" {
			p := nbmodel.LogicalRouterPort{UUID: p.UUID}
			op, err := admin.C.Where(&p).Update(&p, &p.HaChassisGroup)
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, op...)
		}
	}
	for _, g := range rows.Groups {
		if g.ExternalIDs[ovngateway.OwnerKey] != ovngateway.OwnerValue {
			continue
		}
		op, err := admin.C.Where(&g).Delete()
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op...)
	}
	if len(ops) > 0 {
		if _, err := admin.Transact(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	w.sync(t)
}

// sync waits until the client is connected and its cache holds what the
// leader has committed.
func (w *faultWorld) sync(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(faultDeadline)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := w.c.Sync(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client did not reconnect: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pass is one ReconcileAll over every network, as the controller's
// start-up and resync passes are; it returns the first error.
func (w *faultWorld) pass() error {
	_, errs := w.c.ReconcileAll(context.Background(), w.gws)
	return errors.Join(slices.DeleteFunc(errs, func(err error) bool { return err == nil })...)
}

// converge runs passes until one ends without an error, and returns when
// it did and how many passes failed before.
func (w *faultWorld) converge() (time.Time, int, error) {
	deadline := time.Now().Add(faultDeadline)
	failed := 0
	for {
		err := w.pass()
		if err == nil {
			return time.Now(), failed, nil
		}
		failed++
		if time.Now().After(deadline) {
			return time.Time{}, failed, fmt.Errorf("no pass without an error within %s: %w", faultDeadline, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// check reads the leader's rows and fails t unless every port has its
// group with the wanted chassis, no group name is held twice, no
// HA_Chassis is left over, and every foreign row is as seeded.
func (w *faultWorld) check(t *testing.T, what string) {
	t.Helper()
	admin := w.admin(t)
	defer admin.C.Close()
	rows, err := admin.ReadRows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st := rows.State()
	missing := 0
	for _, gw := range w.gws {
		want := ovngatewaytest.Group{ExternalIDs: map[string]string{ovngateway.OwnerKey: ovngateway.OwnerValue, ovngateway.NetworkKey: gw.ID()}}
		for _, m := range gw.Members {
			want.Chassis = append(want.Chassis, ovngatewaytest.Chassis{Name: m.Chassis, Priority: m.Priority})
		}
		if st.Ports[gw.RouterPort].Group != gw.Group() || !cmp.Equal(st.Groups[gw.Group()], want) {
			if missing++; missing <= 3 {
				t.Errorf("%s: port %s has group %q = %+v, want %q = %+v", what, gw.RouterPort, st.Ports[gw.RouterPort].Group, st.Groups[gw.Group()], gw.Group(), want)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%s: %d of %d ports are without their group", what, missing, len(w.gws))
	}
	names := map[string]int{}
	for _, g := range rows.Groups {
		names[g.Name]++
	}
	for name, n := range names {
		if n > 1 {
			t.Errorf("%s: %d HA_Chassis_Group rows are named %s", what, n, name)
		}
	}
	if want := 3*len(w.gws) + len(w.foreign.Chassis); len(rows.Chassis) != want {
		t.Errorf("%s: %d HA_Chassis rows, want %d", what, len(rows.Chassis), want)
	}
	if diff := cmp.Diff(w.foreign, foreignRows(rows)); diff != "" {
		t.Errorf("%s: rows of other owners changed: -before +after:\n%s", what, diff)
	}
}

// figures logs the median and the longest of ds under what.
func figures(t *testing.T, what string, ds []time.Duration) {
	t.Helper()
	if len(ds) == 0 {
		return
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	median := s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	t.Logf("%s, %d kills: median %s, max %s (all: %v)", what, len(s), median.Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), s)
}

// killDuringConverge resets the groups, starts converging, kills victim
// (chosen when the converge has sent its first write) and waits for the
// converge to end. It returns the time from the kill to the end of the
// converge and the member killed.
func (w *faultWorld) killDuringConverge(t *testing.T, victim func() (*ovnlab.Member, error)) (time.Duration, *ovnlab.Member) {
	t.Helper()
	w.reset(t)
	m, err := victim()
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		done   time.Time
		failed int
		err    error
	}
	sent := w.c.Transactions()
	res := make(chan result, 1)
	go func() {
		done, failed, err := w.converge()
		res <- result{done, failed, err}
	}()
	for w.c.Transactions() == sent {
		time.Sleep(100 * time.Microsecond)
	}
	m.Kill()
	killed := time.Now()
	r := <-res
	if r.err != nil {
		t.Fatalf("the converge after killing %s did not complete: %v", m.Name, r.err)
	}
	if w.c.Transactions()-sent < faultNetworks/ovngateway.BatchSize {
		t.Errorf("the converge sent %d transactions, fewer than its %d batches", w.c.Transactions()-sent, faultNetworks/ovngateway.BatchSize)
	}
	return r.done.Sub(killed), m
}

func (w *faultWorld) restart(t *testing.T, m *ovnlab.Member) {
	t.Helper()
	if err := w.nb.Restart(m); err != nil {
		t.Fatal(err)
	}
	if _, err := w.nb.Leader(faultDeadline); err != nil {
		t.Fatal(err)
	}
}

// TestFaultLeaderKilledDuringConverge: the RAFT leader is killed with
// SIGKILL while the client converges 1,000 router ports from nothing; the
// client follows the new leader and the converge completes with every port
// in its group, no group twice and no foreign row touched.
func TestFaultLeaderKilledDuringConverge(t *testing.T) {
	w := newFaultWorld(t)
	leader := func() (*ovnlab.Member, error) { return w.nb.Leader(faultDeadline) }
	w.sweep(t, "NB leader SIGKILLed during a converge of 1,000 router ports, kill to the last port in its group",
		func(int) (time.Duration, *ovnlab.Member) { return w.killDuringConverge(t, leader) })
}

// TestFaultLeaderKilledInSteadyState: with every port in its group, the
// leader is killed; the client moves to the new leader, a pass over every
// network succeeds again without a single write, and the rows are intact.
func TestFaultLeaderKilledInSteadyState(t *testing.T) {
	w := newFaultWorld(t)
	if _, _, err := w.converge(); err != nil {
		t.Fatal(err)
	}
	w.check(t, "before the kills")
	w.sweep(t, "NB leader SIGKILLed in steady state (1,000 ports), kill to a pass over every network confirmed on the new leader",
		func(i int) (time.Duration, *ovnlab.Member) { return w.killSteady(t, i) })
}

// sweep kills *faultKills times with kill, checks the rows after each
// kill, starts the killed member again, and logs the figures under what.
func (w *faultWorld) sweep(t *testing.T, what string, kill func(i int) (time.Duration, *ovnlab.Member)) {
	t.Helper()
	var took []time.Duration
	for i := range *faultKills {
		d, m := kill(i)
		took = append(took, d)
		w.check(t, fmt.Sprintf("kill %d (%s)", i+1, m.Name))
		w.restart(t, m)
		if t.Failed() {
			break
		}
	}
	figures(t, what, took)
}

// killSteady kills the leader of a converged world and returns how long
// it took until a pass over every network succeeded on another member,
// failing t if that pass wrote anything.
func (w *faultWorld) killSteady(t *testing.T, i int) (time.Duration, *ovnlab.Member) {
	t.Helper()
	m, err := w.nb.Leader(faultDeadline)
	if err != nil {
		t.Fatal(err)
	}
	sent := w.c.Transactions()
	m.Kill()
	killed := time.Now()
	// A pass counts once it ran on a connection to another member: until
	// the client notices the kill it answers from its cache.
	deadline := killed.Add(faultDeadline)
	for {
		if ep := w.c.Endpoint(); ep != "" && ep != m.Endpoint() && w.pass() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kill %d: no pass succeeded on the new leader within %s", i+1, faultDeadline)
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(killed)
	if n := w.c.Transactions() - sent; n != 0 {
		t.Errorf("kill %d: a leader change lost nothing, yet the client sent %d transactions", i+1, n)
	}
	return took, m
}

// TestFaultFollowerKilled: a follower is killed during a converge; the
// leader keeps a majority, so the converge completes as if nothing
// happened.
func TestFaultFollowerKilled(t *testing.T) {
	w := newFaultWorld(t)
	d, m := w.killDuringConverge(t, w.nb.Follower)
	w.check(t, "after the follower kill")
	t.Logf("NB follower SIGKILLed during a converge of 1,000 router ports, kill to the last port in its group: %s", d.Round(time.Millisecond))
	w.restart(t, m)
}
