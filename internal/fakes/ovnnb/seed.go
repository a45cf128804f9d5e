package ovnnb

import (
	"fmt"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/pxsubstrate/pxsubstrate/internal/fakes/ovnnb/nbmodel"
)

// AddRouterPort creates the Logical_Router router when it does not exist
// and adds a new Logical_Router_Port named port to it, as Kube-OVN does for
// a subnet. It returns the port's UUID.
func AddRouterPort(t testing.TB, c client.Client, router, port string) string {
	t.Helper()
	lrp := &nbmodel.LogicalRouterPort{
		UUID: "newport", Name: port, MAC: "0a:00:00:00:00:01",
		Networks: []string{"10.0.0.1/24"}, ExternalIDs: map[string]string{"lr": router, "vendor": "kube-ovn"},
	}
	ops, err := c.Create(lrp)
	if err != nil {
		t.Fatal(err)
	}
	var routers []nbmodel.LogicalRouter
	for _, r := range Select[nbmodel.LogicalRouter](t, c) {
		if r.Name == router {
			routers = append(routers, r)
		}
	}
	var more []ovsdb.Operation
	if len(routers) == 0 {
		more, err = c.Create(&nbmodel.LogicalRouter{Name: router, Ports: []string{lrp.UUID}})
	} else {
		r := &routers[0]
		more, err = c.Where(r).Mutate(r, model.Mutation{Field: &r.Ports, Mutator: ovsdb.MutateOperationInsert, Value: []string{lrp.UUID}})
	}
	if err != nil {
		t.Fatal(err)
	}
	res := Transact(t, c, append(ops, more...)...)
	return res[0].UUID.GoUUID
}

// DeleteRouterPort removes the Logical_Router_Port named port from every
// router; the server then garbage-collects the port row.
func DeleteRouterPort(t testing.TB, c client.Client, port string) {
	t.Helper()
	var uuid string
	for _, p := range Select[nbmodel.LogicalRouterPort](t, c) {
		if p.Name == port {
			uuid = p.UUID
		}
	}
	if uuid == "" {
		t.Fatalf("cannot delete router port %q: it does not exist", port)
	}
	var ops []ovsdb.Operation
	for _, r := range Select[nbmodel.LogicalRouter](t, c) {
		r := r
		op, err := c.Where(&r).Mutate(&r, model.Mutation{Field: &r.Ports, Mutator: ovsdb.MutateOperationDelete, Value: []string{uuid}})
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op...)
	}
	Transact(t, c, ops...)
}

// AddGroup inserts an HA_Chassis_Group with the given external_ids and one
// HA_Chassis row per entry of chassis (names may repeat), and returns the
// group's UUID.
func AddGroup(t testing.TB, c client.Client, name string, externalIDs map[string]string, chassis ...Chassis) string {
	t.Helper()
	var ops []ovsdb.Operation
	g := &nbmodel.HAChassisGroup{UUID: "newgroup", Name: name, ExternalIDs: externalIDs}
	for i, ch := range chassis {
		h := &nbmodel.HAChassis{UUID: fmt.Sprintf("newchassis%d", i), ChassisName: ch.Name, Priority: ch.Priority}
		op, err := c.Create(h)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op...)
		g.HaChassis = append(g.HaChassis, h.UUID)
	}
	op, err := c.Create(g)
	if err != nil {
		t.Fatal(err)
	}
	res := Transact(t, c, append(ops, op...)...)
	return res[len(ops)].UUID.GoUUID
}

// GroupUUID returns the UUID of the HA_Chassis_Group named name, or "".
func GroupUUID(t testing.TB, c client.Client, name string) string {
	t.Helper()
	for _, g := range Select[nbmodel.HAChassisGroup](t, c) {
		if g.Name == name {
			return g.UUID
		}
	}
	return ""
}

// SetPortGroup points the router port named port at the group with UUID
// group; an empty group clears the column.
func SetPortGroup(t testing.TB, c client.Client, port, group string) {
	t.Helper()
	p := &nbmodel.LogicalRouterPort{Name: port}
	if group != "" {
		p.HaChassisGroup = &group
	}
	ops, err := c.Where(p).Update(p, &p.HaChassisGroup)
	if err != nil {
		t.Fatal(err)
	}
	res := Transact(t, c, ops...)
	if res[0].Count != 1 {
		t.Fatalf("cannot set the group of router port %q: it does not exist", port)
	}
}

// AddGatewayChassis gives the router port named port a Gateway_Chassis row,
// the legacy way of making it a gateway port.
func AddGatewayChassis(t testing.TB, c client.Client, port, chassis string, priority int) {
	t.Helper()
	gc := &nbmodel.GatewayChassis{UUID: "newgc", Name: port + "-" + chassis, ChassisName: chassis, Priority: priority}
	ops, err := c.Create(gc)
	if err != nil {
		t.Fatal(err)
	}
	p := &nbmodel.LogicalRouterPort{Name: port}
	more, err := c.Where(p).Mutate(p, model.Mutation{Field: &p.GatewayChassis, Mutator: ovsdb.MutateOperationInsert, Value: []string{gc.UUID}})
	if err != nil {
		t.Fatal(err)
	}
	Transact(t, c, append(ops, more...)...)
}
