package ovngateway_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
)

// smBackend is an NB the state machine can take down and bring back.
type smBackend struct {
	endpoint, admin string
	down            func()
	up              func()
	// adminWhileDown says whether seeding rows works during an outage.
	adminWhileDown bool
	// syncBeforePass makes each random pass wait until the client's cache
	// holds every row committed so far. libovsdb's in-memory server skips
	// empty values when it compares a wait's rows, so it cannot refuse the
	// pointer write of a pass that decided on a cache still missing a
	// foreign group the port was just given; ovsdb-server refuses it, and
	// there the passes run on whatever the cache holds.
	syncBeforePass bool
}

// smNetwork is one network of the model.
type smNetwork struct {
	ns, name, vpc, subnet string
	hasPort               bool
	// foreign is "" or the kind of foreign rows that make it ForeignGroup:
	// owner, network, gwchassis or portgroup.
	foreign string
}

func (n *smNetwork) port() string  { return ovngateway.RouterPortName(n.vpc, n.subnet) }
func (n *smNetwork) group() string { return ovngateway.GroupName(n.port()) }
func (n *smNetwork) id() string    { return n.ns + "/" + n.name }

type smNode struct {
	chassis         string
	ready, deleting bool
}

// gatewayMachine drives networks, nodes, router ports, foreign rows and NB
// outages at random, against a trivial model of what must hold.
type gatewayMachine struct {
	outer   *testing.T
	be      smBackend
	c       *ovngateway.Client
	adminC  client.Client
	nets    []*smNetwork
	nodes   map[string]*smNode
	isDown  bool
	foreign map[string]any // snapshots of foreign rows: "group:<uuid>" or "port:<name>"
	seq     int            // makes foreign group names unique
}

func newGatewayMachine(outer *testing.T, be smBackend, c *ovngateway.Client) *gatewayMachine {
	m := &gatewayMachine{outer: outer, be: be, c: c, foreign: map[string]any{}, nodes: map[string]*smNode{}}
	ovngatewaytest.Reset(outer, m.admin())
	for i, spec := range [][2]string{{"vpc1", "sub0"}, {"vpc1", "sub1"}, {"vpc2", "sub2"}, {"vpc2", "sub3"}} {
		m.nets = append(m.nets, &smNetwork{ns: fmt.Sprintf("tenant-%d", i%2), name: fmt.Sprintf("net%d", i), vpc: spec[0], subnet: spec[1]})
	}
	for _, n := range []string{"node-a", "node-b", "node-c", "node-d", "node-e"} {
		m.nodes[n] = &smNode{}
	}
	return m
}

// admin returns a client that sees every table, reconnecting after a kill.
func (m *gatewayMachine) admin() client.Client {
	if m.adminC == nil || m.adminC.CurrentEndpoint() == "" || m.adminC.Cache() == nil {
		m.adminC = ovngatewaytest.Connect(m.outer, m.be.admin)
	}
	return m.adminC
}

func (m *gatewayMachine) canSeed() bool { return !m.isDown || m.be.adminWhileDown }

// wanted is the model's gateway for n: the eligible nodes, one per chassis
// (first name wins), ranked for the VPC.
func (m *gatewayMachine) wanted(t *rapid.T, n *smNetwork) ovngateway.Gateway {
	names := make([]string, 0, len(m.nodes))
	for name := range m.nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	seen := map[string]bool{}
	var cands []ovngateway.Candidate
	for _, name := range names {
		nd := m.nodes[name]
		if !nd.ready || nd.chassis == "" || nd.deleting || seen[nd.chassis] {
			continue
		}
		seen[nd.chassis] = true
		cands = append(cands, ovngateway.Candidate{Node: name, Chassis: nd.chassis})
	}
	gw, err := ovngateway.NewGateway(ovngateway.Network{Namespace: n.ns, Name: n.name, RouterPort: n.port()}, n.vpc, "pxtenant", cands)
	if err != nil {
		t.Fatal(err)
	}
	return gw
}

func (m *gatewayMachine) Node(t *rapid.T) {
	nd := m.nodes[rapid.SampledFrom([]string{"node-a", "node-b", "node-c", "node-d", "node-e"}).Draw(t, "node")]
	nd.ready = rapid.Bool().Draw(t, "ready")
	nd.chassis = rapid.SampledFrom([]string{"", "ch-1", "ch-2", "ch-3", "ch-4"}).Draw(t, "chassis")
	nd.deleting = rapid.IntRange(0, 4).Draw(t, "deleting") == 0
}

func (m *gatewayMachine) Port(t *rapid.T) {
	if !m.canSeed() {
		return // the NB is down: nobody can write rows
	}
	n := rapid.SampledFrom(m.nets).Draw(t, "net")
	if n.hasPort {
		ovngatewaytest.DeleteRouterPort(m.outer, m.admin(), n.port())
		delete(m.foreign, "port:"+n.port())
		if n.foreign == "gwchassis" || n.foreign == "portgroup" {
			n.foreign = ""
		}
	} else {
		ovngatewaytest.AddRouterPort(m.outer, m.admin(), n.vpc, n.port())
	}
	n.hasPort = !n.hasPort
}

func (m *gatewayMachine) Foreign(t *rapid.T) {
	if !m.canSeed() {
		return // the NB is down: nobody can write rows
	}
	n := rapid.SampledFrom(m.nets).Draw(t, "net")
	if n.foreign != "" {
		m.unforeign(n)
		return
	}
	kinds := []string{"owner", "network"}
	if n.hasPort {
		kinds = append(kinds, "gwchassis", "portgroup")
	}
	kind := rapid.SampledFrom(kinds).Draw(t, "kind")
	a := m.admin()
	switch kind {
	case "owner", "network":
		ids := map[string]string{ovngateway.OwnerKey: "kube-ovn"}
		if kind == "network" {
			ids = map[string]string{ovngateway.OwnerKey: ovngateway.OwnerValue, ovngateway.NetworkKey: "other/net"}
		}
		uuid := ovngatewaytest.GroupUUID(m.outer, a, n.group())
		if uuid == "" {
			uuid = ovngatewaytest.AddGroup(m.outer, a, n.group(), ids, ovngatewaytest.Chassis{Name: "ch-theirs", Priority: 7})
		} else {
			g := &nbmodel.HAChassisGroup{UUID: uuid, ExternalIDs: ids}
			ops, err := a.Where(g).Update(g, &g.ExternalIDs)
			if err != nil {
				t.Fatal(err)
			}
			ovngatewaytest.Transact(m.outer, a, ops...)
		}
		m.foreign["group:"+uuid] = m.rows().group(uuid)
	case "gwchassis":
		ovngatewaytest.AddGatewayChassis(m.outer, a, n.port(), "ch-theirs", 5)
		m.foreign["port:"+n.port()] = m.rows().port(n.port())
	case "portgroup":
		m.seq++
		uuid := ovngatewaytest.AddGroup(m.outer, a, fmt.Sprintf("theirs-%d", m.seq), map[string]string{ovngateway.OwnerKey: "kube-ovn"})
		ovngatewaytest.SetPortGroup(m.outer, a, n.port(), uuid)
		r := m.rows()
		m.foreign["group:"+uuid] = r.group(uuid)
		m.foreign["port:"+n.port()] = r.port(n.port())
	}
	n.foreign = kind
}

// unforeign removes the foreign rows that made n foreign.
func (m *gatewayMachine) unforeign(n *smNetwork) {
	a := m.admin()
	switch n.foreign {
	case "owner", "network", "portgroup":
		uuid := ovngatewaytest.GroupUUID(m.outer, a, n.group())
		if n.foreign == "portgroup" {
			uuid = *m.rows().ports[n.port()].HaChassisGroup
		}
		// Clear every port row that points at the group and retire the
		// group, in one transaction: it is renamed and left to its foreign
		// owner, so it stays as a foreign row that must never be written.
		// (Deleting it instead trips libovsdb's in-memory server, whose
		// reference index can keep a port row that no longer exists.)
		var ops []ovsdb.Operation
		for _, p := range m.rows().allPorts {
			if p.HaChassisGroup != nil && *p.HaChassisGroup == uuid {
				clear := &nbmodel.LogicalRouterPort{UUID: p.UUID}
				op, err := a.Where(clear).Update(clear, &clear.HaChassisGroup)
				if err != nil {
					m.outer.Fatal(err)
				}
				ops = append(ops, op...)
			}
		}
		m.seq++
		g := &nbmodel.HAChassisGroup{UUID: uuid, Name: fmt.Sprintf("retired-%d", m.seq), ExternalIDs: map[string]string{ovngateway.OwnerKey: "kube-ovn"}}
		op, err := a.Where(g).Update(g, &g.Name, &g.ExternalIDs)
		if err != nil {
			m.outer.Fatal(err)
		}
		ovngatewaytest.Transact(m.outer, a, append(ops, op...)...)
		m.foreign["group:"+uuid] = m.rows().group(uuid)
	case "gwchassis":
		p := &nbmodel.LogicalRouterPort{Name: n.port()}
		ops, err := a.Where(p).Update(p, &p.GatewayChassis)
		if err != nil {
			m.outer.Fatal(err)
		}
		ovngatewaytest.Transact(m.outer, a, ops...)
	}
	delete(m.foreign, "port:"+n.port())
	n.foreign = ""
}

func (m *gatewayMachine) Reconcile(t *rapid.T) {
	n := rapid.SampledFrom(m.nets).Draw(t, "net")
	if m.be.syncBeforePass && !m.isDown {
		// An error here means the client is still reconnecting; the pass
		// below then fails the same way.
		_ = m.c.Sync(context.Background())
	}
	_, err := m.c.Reconcile(context.Background(), m.wanted(t, n))
	if err != nil && !m.isDown {
		// A pass may fail right after an outage while the client reconnects.
		t.Logf("Reconcile(%s): %v", n.id(), err)
	}
}

// ReconcileAtOnce passes over a random set of networks with one Reconcile
// call each, all at the same time, on a cache that holds every committed
// row. Outside an outage each call must get its own answer: the reason the
// model predicts for its network, and for a network that gets its chassis,
// its group with exactly the wanted chassis and its port pointing at it,
// whatever the other calls in the same transactions asked for.
func (m *gatewayMachine) ReconcileAtOnce(t *rapid.T) {
	nets := rapid.SliceOfNDistinct(rapid.SampledFrom(m.nets), 2, len(m.nets), func(n *smNetwork) string { return n.id() }).Draw(t, "nets")
	if !m.isDown {
		_ = m.c.Sync(context.Background())
	}
	gws := make([]ovngateway.Gateway, len(nets))
	for i, n := range nets {
		gws[i] = m.wanted(t, n)
	}
	outs, errs := reconcileAtOnce(m.c, gws)
	if m.isDown {
		return
	}
	var state ovngatewaytest.State
	for i, n := range nets {
		o, err := outs[i], errs[i]
		if errors.Is(err, ovngateway.ErrNBUnavailable) {
			t.Logf("Reconcile(%s) right after an outage: %v", n.id(), err)
			continue
		}
		if want := m.expected(t, n); err != nil || o.Reason != want || o.Group != n.group() {
			t.Fatalf("network %s among %d calls at once: %s for group %q, %v; want %s for %q", n.id(), len(nets), o.Reason, o.Group, err, want, n.group())
		}
		if o.Reason != ovngateway.ReasonChassisAssigned {
			continue
		}
		if state.Groups == nil {
			state = ovngatewaytest.Dump(m.outer, m.admin())
		}
		if diff := cmp.Diff(wantGroup(gws[i], nil), state.Groups[n.group()]); diff != "" {
			t.Fatalf("network %s among %d calls at once: group: -want +got:\n%s", n.id(), len(nets), diff)
		}
		if got := state.Ports[n.port()].Group; got != n.group() {
			t.Fatalf("network %s among %d calls at once: port points at %q, want %q", n.id(), len(nets), got, n.group())
		}
	}
}

func (m *gatewayMachine) Outage(t *rapid.T) {
	if rapid.IntRange(0, 3).Draw(t, "chance") != 0 {
		return // outages are rare: three draws in four change nothing
	}
	if m.isDown {
		m.restore(t)
		return
	}
	m.be.down()
	m.isDown = true
	// The outage lasts until the client has noticed it.
	m.awaitEndpoint(t, false, "notice the outage")
}

// restore ends the outage and waits until the client has connected again,
// so that the next outage never cuts a connection while libovsdb v0.8.1 is
// still inside Connect: there the disconnect handler it has just started
// waits on a WaitGroup that Connect is still adding to, which the race
// detector reports (upstream ovn-kubernetes/libovsdb#497 and #500, not in
// a release).
func (m *gatewayMachine) restore(t *rapid.T) {
	m.be.up()
	m.isDown = false
	m.awaitEndpoint(t, true, "reconnect")
}

// awaitEndpoint waits up to 10s until the client is connected (up) or has
// noticed that it is not.
func (m *gatewayMachine) awaitEndpoint(t *rapid.T, up bool, what string) {
	deadline := time.Now().Add(10 * time.Second)
	for (m.c.Endpoint() != "") != up {
		if time.Now().After(deadline) {
			t.Fatalf("the client did not %s within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// expected is the reason the model predicts for n once the client's cache
// has caught up.
func (m *gatewayMachine) expected(t *rapid.T, n *smNetwork) ovngateway.Reason {
	switch {
	case n.foreign != "":
		return ovngateway.ReasonForeignGroup
	case !n.hasPort:
		return ovngateway.ReasonRouterPortMissing
	case len(m.wanted(t, n).Members) == 0:
		return ovngateway.ReasonNoTrunkNodes
	}
	return ovngateway.ReasonChassisAssigned
}

// Check is the invariant after every step: foreign rows are exactly as
// their owners left them.
func (m *gatewayMachine) Check(t *rapid.T) {
	if !m.canSeed() {
		return
	}
	if len(m.foreign) == 0 {
		return
	}
	r := m.rows()
	for key, want := range m.foreign {
		var got any
		if uuid, ok := strings.CutPrefix(key, "group:"); ok {
			got = r.group(uuid)
		} else {
			got = r.port(strings.TrimPrefix(key, "port:"))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("foreign row %s was written: -want +got:\n%s", key, diff)
		}
	}
}

// converge brings the NB back, passes over every network until a full
// round succeeds, writes nothing and reports what the model predicts (the
// client's cache lags behind the admin's writes), and checks the end state.
func (m *gatewayMachine) converge(t *rapid.T) {
	if m.isDown {
		m.restore(t)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		before, off := m.c.Transactions(), []string{}
		for _, n := range m.nets {
			o, err := m.c.Reconcile(context.Background(), m.wanted(t, n))
			if want := m.expected(t, n); err != nil || o.Reason != want {
				off = append(off, fmt.Sprintf("%s: %s (want %s) %v", n.id(), o.Reason, want, err))
			}
		}
		if len(off) == 0 && m.c.Transactions() == before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no convergence within 20s: %v", off)
		}
		time.Sleep(10 * time.Millisecond)
	}
	m.Check(t)
	state := ovngatewaytest.Dump(m.outer, m.admin())
	for _, n := range m.nets {
		gw := m.wanted(t, n)
		if !n.hasPort || n.foreign != "" || len(gw.Members) == 0 {
			continue
		}
		want := wantGroup(gw, nil)
		if diff := cmp.Diff(want, state.Groups[n.group()]); diff != "" {
			t.Fatalf("network %s: group after convergence: -want +got:\n%s", n.id(), diff)
		}
		if got := state.Ports[n.port()].Group; got != n.group() {
			t.Fatalf("network %s: port points at %q, want %q", n.id(), got, n.group())
		}
	}
}

// nbRows is what the NB holds, read straight from the server.
type nbRows struct {
	groups   map[string]nbmodel.HAChassisGroup
	chassis  map[string]nbmodel.HAChassis
	ports    map[string]nbmodel.LogicalRouterPort
	allPorts []nbmodel.LogicalRouterPort
}

func (m *gatewayMachine) rows() nbRows {
	all := ovngatewaytest.ReadRows(m.outer, m.admin())
	r := nbRows{groups: map[string]nbmodel.HAChassisGroup{}, chassis: map[string]nbmodel.HAChassis{}, ports: map[string]nbmodel.LogicalRouterPort{}}
	for _, g := range all.Groups {
		r.groups[g.UUID] = g
	}
	for _, h := range all.Chassis {
		r.chassis[h.UUID] = h
	}
	for _, p := range all.Ports {
		r.ports[p.Name] = p
	}
	r.allPorts = all.Ports
	return r
}

// group is a foreign group as its owner left it: name, tags and members.
func (r nbRows) group(uuid string) any {
	g, ok := r.groups[uuid]
	if !ok {
		return "missing"
	}
	var members []string
	for _, u := range g.HaChassis {
		members = append(members, fmt.Sprintf("%s/%d", r.chassis[u].ChassisName, r.chassis[u].Priority))
	}
	slices.Sort(members)
	return fmt.Sprintf("%s %v %v", g.Name, g.ExternalIDs, members)
}

// port is the gateway columns of a foreign port.
func (r nbRows) port(name string) any {
	p, ok := r.ports[name]
	if !ok {
		return "missing"
	}
	group := ""
	if p.HaChassisGroup != nil {
		group = *p.HaChassisGroup
	}
	return fmt.Sprintf("group=%s gateway_chassis=%v", group, p.GatewayChassis)
}

// machineChecks is how many random runs each machine gets unless
// -rapid.checks says otherwise: every run starts a server or empties one,
// and kills it now and then.
const machineChecks = "25"

// runGatewayMachine runs the machine; open gives each check its backend
// and a fresh client, and returns a function that releases them.
func runGatewayMachine(t *testing.T, open func() (smBackend, *ovngateway.Client, func())) {
	defer limitRapidChecks(t, machineChecks)()
	rapid.Check(t, func(rt *rapid.T) {
		be, c, release := open()
		defer release()
		m := newGatewayMachine(t, be, c)
		defer func() {
			if m.adminC != nil {
				m.adminC.Close()
			}
		}()
		rt.Repeat(map[string]func(*rapid.T){
			"node":      m.Node,
			"port":      m.Port,
			"foreign":   m.Foreign,
			"reconcile": m.Reconcile,
			"at-once":   m.ReconcileAtOnce,
			"outage":    m.Outage,
			"":          m.Check,
		})
		m.converge(rt)
		before := c.Transactions()
		for _, n := range m.nets {
			if o, err := c.Reconcile(context.Background(), m.wanted(rt, n)); err != nil || o.Changed {
				rt.Fatalf("a converged pass must be a no-op: %+v, %v", o, err)
			}
		}
		if c.Transactions() != before {
			rt.Fatalf("a converged pass sent %d transactions", c.Transactions()-before)
		}
	})
}

// TestGatewayStateMachineInMemory gives each check a new in-memory server:
// libovsdb's server keeps the monitors of closed connections, so one server
// would slow down with every outage.
func TestGatewayStateMachineInMemory(t *testing.T) {
	runGatewayMachine(t, func() (smBackend, *ovngateway.Client, func()) {
		s := ovngatewaytest.StartInMemory(t)
		c := dial(t, s.Endpoint())
		be := smBackend{
			endpoint: s.Endpoint(), admin: s.DirectEndpoint(), adminWhileDown: true, syncBeforePass: true,
			down: s.Down,
			up: func() {
				if err := s.Up(); err != nil {
					t.Fatal(err)
				}
			},
		}
		return be, c, func() { c.Close(); s.Close() }
	})
}

// TestGatewayStateMachineReal shares one ovsdb-server between checks and
// empties it before each.
func TestGatewayStateMachineReal(t *testing.T) {
	s := ovngatewaytest.StartReal(t)
	be := smBackend{
		endpoint: s.Endpoint(), admin: s.Endpoint(),
		down: s.Kill,
		up: func() {
			if err := s.Restart(); err != nil {
				t.Fatal(err)
			}
		},
	}
	runGatewayMachine(t, func() (smBackend, *ovngateway.Client, func()) {
		if !s.Running() {
			be.up()
		}
		c := dial(t, s.Endpoint())
		return be, c, c.Close
	})
}

// limitRapidChecks sets -rapid.checks to n for one test unless the command
// line set it, and returns the function that restores it.
func limitRapidChecks(t *testing.T, n string) func() {
	f := flag.Lookup("rapid.checks")
	explicit := false
	flag.Visit(func(v *flag.Flag) { explicit = explicit || v.Name == "rapid.checks" })
	if f == nil || explicit {
		return func() {}
	}
	old := f.Value.String()
	if err := f.Value.Set(n); err != nil {
		t.Fatal(err)
	}
	return func() { _ = f.Value.Set(old) }
}
