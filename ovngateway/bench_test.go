package ovngateway

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/nbdb"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
)

const benchNetworks = 1000

// benchWorld is a real ovsdb-server holding benchNetworks router ports on
// 50 VPC routers, and the gateway each network wants.
type benchWorld struct {
	server *ovngatewaytest.Real
	admin  client.Client
	gws    []Gateway
}

func newBenchWorld(b *testing.B) *benchWorld {
	b.Helper()
	s := ovngatewaytest.StartReal(b)
	w := &benchWorld{server: s, admin: unmonitored(b, s.Endpoint())}
	var ops []ovsdb.Operation
	ports := map[string][]string{}
	cands := []Candidate{{Node: "node-1", Chassis: "ch-1"}, {Node: "node-2", Chassis: "ch-2"}, {Node: "node-3", Chassis: "ch-3"}}
	for i := range benchNetworks {
		vpc, subnet := fmt.Sprintf("vpc%d", i%50), fmt.Sprintf("sub%d", i)
		port := RouterPortName(vpc, subnet)
		lrp := &nbmodel.LogicalRouterPort{UUID: fmt.Sprintf("p%d", i), Name: port, MAC: "0a:00:00:00:00:01", Networks: []string{"10.0.0.1/24"}}
		op, err := w.admin.Create(lrp)
		if err != nil {
			b.Fatal(err)
		}
		ops = append(ops, op...)
		ports[vpc] = append(ports[vpc], lrp.UUID)
		gw, err := NewGateway(Network{Namespace: "tenant", Name: fmt.Sprintf("net%d", i), RouterPort: port}, vpc, "pxtenant", cands)
		if err != nil {
			b.Fatal(err)
		}
		w.gws = append(w.gws, gw)
	}
	for vpc, refs := range ports {
		op, err := w.admin.Create(&nbmodel.LogicalRouter{Name: vpc, Ports: refs})
		if err != nil {
			b.Fatal(err)
		}
		ops = append(ops, op...)
	}
	ovngatewaytest.Transact(b, w.admin, ops...)
	return w
}

// unmonitored connects a full-model client without a monitor: the
// benchmark's own seeding and checks then cost the server nothing while
// the approaches are timed.
func unmonitored(b *testing.B, endpoint string) client.Client {
	b.Helper()
	m, err := ovngatewaytest.ClientModel()
	if err != nil {
		b.Fatal(err)
	}
	c, err := client.NewOVSDBClient(m, client.WithEndpoint(endpoint))
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Connect(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

// reset removes every group, so that each approach starts from router ports
// without gateways.
func (w *benchWorld) reset(b *testing.B) {
	b.Helper()
	var ops []ovsdb.Operation
	for _, p := range ovngatewaytest.ReadRows(b, w.admin).Ports {
		if p.HaChassisGroup != nil {
			p := nbmodel.LogicalRouterPort{UUID: p.UUID}
			op, err := w.admin.Where(&p).Update(&p, &p.HaChassisGroup)
			if err != nil {
				b.Fatal(err)
			}
			ops = append(ops, op...)
		}
	}
	for _, g := range ovngatewaytest.ReadRows(b, w.admin).Groups {
		g := g
		op, err := w.admin.Where(&g).Delete()
		if err != nil {
			b.Fatal(err)
		}
		ops = append(ops, op...)
	}
	if len(ops) > 0 {
		ovngatewaytest.Transact(b, w.admin, ops...)
	}
}

// converged fails b unless every port uses its own group with 3 chassis.
func (w *benchWorld) converged(b *testing.B, who string) {
	b.Helper()
	st := ovngatewaytest.Dump(b, w.admin)
	for _, gw := range w.gws {
		if st.Ports[gw.RouterPort].Group != gw.Group() || len(st.Groups[gw.Group()].Chassis) != 3 {
			b.Fatalf("%s left network %s unconverged: %+v", who, gw.ID(), st.Ports[gw.RouterPort])
		}
	}
}

// uncached is the naive peer: the same decisions and writes, but every pass
// reads its rows from the server with select transactions instead of a
// monitored cache.
type uncached struct {
	s *session
}

func newUncached(b *testing.B, endpoint string) *uncached {
	b.Helper()
	m, err := Model()
	if err != nil {
		b.Fatal(err)
	}
	nb, err := client.NewOVSDBClient(m, client.WithEndpoint(endpoint))
	if err != nil {
		b.Fatal(err)
	}
	if err := nb.Connect(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nb.Close)
	return &uncached{s: &session{c: &Client{lost: make(chan struct{}, 1)}, nb: nb}}
}

func (u *uncached) reconcile(ctx context.Context, gw Gateway) error {
	v, err := u.read(ctx, gw.Network)
	if err != nil {
		return err
	}
	p := decide(gw, v)
	if !p.writes() {
		return nil
	}
	t, err := u.s.build(gw, v, p)
	if err != nil {
		return err
	}
	return u.s.transact(ctx, t)
}

// read selects the port and the group by name, then the group's members.
func (u *uncached) read(ctx context.Context, n Network) (view, error) {
	v := view{members: map[string]nbdb.HAChassis{}}
	res, err := u.selects(ctx,
		ovsdb.Operation{Op: ovsdb.OperationSelect, Table: nbdb.LogicalRouterPortTable, Where: []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: n.RouterPort}}},
		ovsdb.Operation{Op: ovsdb.OperationSelect, Table: nbdb.HAChassisGroupTable, Where: []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: n.Group()}}},
	)
	if err != nil {
		return v, err
	}
	var ports []nbdb.LogicalRouterPort
	var groups []nbdb.HAChassisGroup
	if err := u.decode(nbdb.LogicalRouterPortTable, res[0].Rows, &ports); err != nil {
		return v, err
	}
	if err := u.decode(nbdb.HAChassisGroupTable, res[1].Rows, &groups); err != nil {
		return v, err
	}
	if len(ports) > 0 {
		v.port = &ports[0]
	}
	if len(groups) == 0 {
		return v, nil
	}
	v.group = &groups[0]
	var ops []ovsdb.Operation
	for _, m := range v.group.HaChassis {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: nbdb.HAChassisTable, Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: m}}}})
	}
	if len(ops) == 0 {
		return v, nil
	}
	res, err = u.selects(ctx, ops...)
	if err != nil {
		return v, err
	}
	for _, r := range res {
		var hs []nbdb.HAChassis
		if err := u.decode(nbdb.HAChassisTable, r.Rows, &hs); err != nil {
			return v, err
		}
		for _, h := range hs {
			v.members[h.UUID] = h
		}
	}
	return v, nil
}

func (u *uncached) selects(ctx context.Context, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	u.s.c.txns.Add(1)
	res, err := u.s.nb.Transact(ctx, ops...)
	if err != nil {
		return nil, err
	}
	if _, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		return nil, err
	}
	return res, nil
}

func (u *uncached) decode(table string, rows []ovsdb.Row, out any) error {
	dbModel := u.s.nb.Cache().DatabaseModel()
	switch out := out.(type) {
	case *[]nbdb.LogicalRouterPort:
		return decodeRows(dbModel, table, rows, out)
	case *[]nbdb.HAChassisGroup:
		return decodeRows(dbModel, table, rows, out)
	case *[]nbdb.HAChassis:
		return decodeRows(dbModel, table, rows, out)
	}
	return fmt.Errorf("cannot decode into %T", out)
}

// nbctl converges one network with one ovn-nbctl process: the cheapest use
// of the CLI, a single transaction that creates the chassis and the group
// and sets the port, with no ownership checks at all.
func nbctl(endpoint string, gw Gateway) error {
	args := []string{"--db=" + endpoint}
	var refs []string
	for i, m := range gw.Members {
		id := fmt.Sprintf("@c%d", i)
		refs = append(refs, id)
		args = append(args, "--", "--id="+id, "create", "HA_Chassis", "chassis_name="+m.Chassis, fmt.Sprintf("priority=%d", m.Priority))
	}
	args = append(args,
		"--", "--id=@g", "create", "HA_Chassis_Group", "name="+gw.Group(),
		"external_ids:"+OwnerKey+"="+OwnerValue, "external_ids:"+NetworkKey+"="+gw.ID(),
		"ha_chassis=["+strings.Join(refs, ",")+"]",
		"--", "set", "Logical_Router_Port", gw.RouterPort, "ha_chassis_group=@g")
	out, err := exec.Command("ovn-nbctl", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ovn-nbctl: %w: %s", err, out)
	}
	return nil
}

// BenchmarkConverge1000 converges 1,000 router ports on a real ovsdb-server
// in the same run: this package one network per call (Reconcile: cached
// reads, one transaction per network), controller-style (1,000 Reconcile
// calls at once, whose writes the coalescer merges into shared
// transactions), and all at once (ReconcileAll: the writes of 100 networks
// per transaction), the uncached read-then-write peer, and one ovn-nbctl
// process per network. Each approach has the server to itself: the
// package's monitored client is connected only while its own passes run, so
// the others never pay for decoding its monitor updates. The fast
// approaches take convergeRounds turns per iteration. It reports
// milliseconds per 1,000 networks and the ratios.
func BenchmarkConverge1000(b *testing.B) {
	w := newBenchWorld(b)
	ctx := context.Background()
	naive := newUncached(b, w.server.Endpoint())
	var single, coalesced, batched, peer, cli time.Duration
	// timed resets the NB, runs setup, and adds the time run takes to d
	// (its own clock, which setup never runs under), then checks that run
	// converged every network.
	timed := func(d *time.Duration, who string, setup, run func()) {
		b.StopTimer()
		w.reset(b)
		setup()
		b.StartTimer()
		start := time.Now()
		run()
		*d += time.Since(start)
		b.StopTimer()
		w.converged(b, who)
		b.StartTimer()
	}
	// ours runs the passes with a client connected (and its cache filled)
	// before the clock starts and closed after it stops.
	ours := func(d *time.Duration, who string, run func(c *Client)) {
		var c *Client
		timed(d, who, func() { c = dialBench(b, w.server.Endpoint()) }, func() { run(c) })
		c.Close()
	}
	nothing := func() {}
	b.ResetTimer()
	for range b.N {
		for range convergeRounds {
			ours(&single, "Reconcile", func(c *Client) {
				for _, gw := range w.gws {
					if _, err := c.Reconcile(ctx, gw); err != nil {
						b.Fatal(err)
					}
				}
			})
			ours(&coalesced, "concurrent Reconcile", func(c *Client) {
				for i, err := range second(concurrently(ctx, c, w.gws)) {
					if err != nil {
						b.Fatalf("network %d: %v", i, err)
					}
				}
			})
			ours(&batched, "ReconcileAll", func(c *Client) {
				for i, err := range second(c.ReconcileAll(ctx, w.gws)) {
					if err != nil {
						b.Fatalf("network %d: %v", i, err)
					}
				}
			})
			timed(&peer, "the uncached peer", nothing, func() {
				for _, gw := range w.gws {
					if err := naive.reconcile(ctx, gw); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		timed(&cli, "ovn-nbctl", nothing, func() {
			for _, gw := range w.gws {
				if err := nbctl(w.server.Endpoint(), gw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	n := float64(b.N)
	rounds := n * convergeRounds
	b.ReportMetric(float64(single.Milliseconds())/rounds, "reconcile-ms/1000nets")
	b.ReportMetric(float64(coalesced.Milliseconds())/rounds, "concurrent-ms/1000nets")
	b.ReportMetric(float64(batched.Milliseconds())/rounds, "reconcileall-ms/1000nets")
	b.ReportMetric(float64(peer.Milliseconds())/rounds, "uncached-ms/1000nets")
	b.ReportMetric(float64(cli.Milliseconds())/n, "nbctl-ms/1000nets")
	b.ReportMetric(float64(peer)/float64(coalesced), "concurrent-x-vs-uncached")
	b.ReportMetric(float64(peer)/float64(single), "reconcile-x-vs-uncached")
	b.ReportMetric(float64(cli)*convergeRounds/float64(single), "reconcile-x-vs-nbctl")
	b.ReportMetric(float64(peer)/float64(batched), "reconcileall-x-vs-uncached")
	b.ReportMetric(float64(cli)*convergeRounds/float64(batched), "reconcileall-x-vs-nbctl")
}

// convergeRounds is how many times each approach but ovn-nbctl converges
// the 1,000 networks per benchmark iteration, in turn with the others: one
// converge takes a tenth of a second, about as long as the pauses of a
// shared two-core machine, so that a single pass per approach would measure
// the machine as much as the approach, and taking turns gives every
// approach the same share of a slow moment.
const convergeRounds = 5

// concurrently calls Reconcile for every network at once, as the
// controller's workers do, and returns each call's error.
func concurrently(ctx context.Context, c *Client, gws []Gateway) ([]Outcome, []error) {
	outs, errs := make([]Outcome, len(gws)), make([]error, len(gws))
	var wg sync.WaitGroup
	for i, gw := range gws {
		wg.Go(func() { outs[i], errs[i] = c.Reconcile(ctx, gw) })
	}
	wg.Wait()
	return outs, errs
}

// dialBench connects a Client whose cache holds the whole database.
func dialBench(b *testing.B, endpoint string) *Client {
	b.Helper()
	c, err := Dial(context.Background(), Config{Address: endpoint})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func second[A, B any](_ A, b B) B { return b }

// BenchmarkResync1000 passes over 1,000 converged networks: this package
// sends no transaction at all, per network, 1,000 calls at once, or all at
// once; the uncached
// peer reads every network from the server (with the package's client
// closed, so that the peer has the server to itself).
func BenchmarkResync1000(b *testing.B) {
	w := newBenchWorld(b)
	ctx := context.Background()
	c := dialBench(b, w.server.Endpoint())
	for i, err := range second(c.ReconcileAll(ctx, w.gws)) {
		if err != nil {
			b.Fatalf("network %d: %v", i, err)
		}
	}
	c.Close()
	naive := newUncached(b, w.server.Endpoint())
	var single, coalesced, batched, peer time.Duration
	var txns uint64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		c := dialBench(b, w.server.Endpoint())
		b.StartTimer()
		start := time.Now()
		for _, gw := range w.gws {
			o, err := c.Reconcile(ctx, gw)
			if err != nil || o.Changed {
				b.Fatalf("a resync of a converged network must not write: %+v, %v", o, err)
			}
		}
		single += time.Since(start)
		start = time.Now()
		outs, errs := concurrently(ctx, c, w.gws)
		coalesced += time.Since(start)
		for i := range outs {
			if errs[i] != nil || outs[i].Changed {
				b.Fatalf("a resync of a converged network must not write: %+v, %v", outs[i], errs[i])
			}
		}
		start = time.Now()
		outs, errs = c.ReconcileAll(ctx, w.gws)
		batched += time.Since(start)
		for i := range outs {
			if errs[i] != nil || outs[i].Changed {
				b.Fatalf("a resync of a converged network must not write: %+v, %v", outs[i], errs[i])
			}
		}
		txns += c.Transactions()
		b.StopTimer()
		c.Close()
		b.StartTimer()
		start = time.Now()
		for _, gw := range w.gws {
			if err := naive.reconcile(ctx, gw); err != nil {
				b.Fatal(err)
			}
		}
		peer += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(txns)/n, "txns/resync")
	b.ReportMetric(float64(single.Microseconds())/n/1000, "reconcile-ms/1000nets")
	b.ReportMetric(float64(coalesced.Microseconds())/n/1000, "concurrent-ms/1000nets")
	b.ReportMetric(float64(batched.Microseconds())/n/1000, "reconcileall-ms/1000nets")
	b.ReportMetric(float64(peer.Microseconds())/n/1000, "uncached-ms/1000nets")
	b.ReportMetric(float64(peer)/float64(single), "reconcile-x-vs-uncached")
	b.ReportMetric(float64(peer)/float64(batched), "reconcileall-x-vs-uncached")
}

func decodeRows[T any](dbModel model.DatabaseModel, table string, rows []ovsdb.Row, out *[]T) error {
	for _, row := range rows {
		u, _ := row["_uuid"].(ovsdb.UUID)
		m, err := model.CreateModel(dbModel, table, &row, u.GoUUID)
		if err != nil {
			return err
		}
		*out = append(*out, *(m.(*T)))
	}
	return nil
}
