package ovngatewaytest

import (
	"context"
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
)

// AddRouterPort creates the Logical_Router router when it does not exist
// and adds a new Logical_Router_Port named port to it, as Kube-OVN does for
// a subnet. It returns the port's UUID.
func (a Admin) AddRouterPort(ctx context.Context, router, port string) (string, error) {
	uuids, err := a.AddRouterPorts(ctx, router, port)
	if err != nil {
		return "", err
	}
	return uuids[0], nil
}

// AddRouterPorts is AddRouterPort for many ports of one router, in one
// transaction. It returns the ports' UUIDs in order.
func (a Admin) AddRouterPorts(ctx context.Context, router string, ports ...string) ([]string, error) {
	var ops []ovsdb.Operation
	names := make([]string, len(ports))
	for i, port := range ports {
		names[i] = fmt.Sprintf("newport%d", i)
		lrp := &nbmodel.LogicalRouterPort{
			UUID: names[i], Name: port, MAC: "0a:00:00:00:00:01",
			Networks: []string{"10.0.0.1/24"}, ExternalIDs: map[string]string{"lr": router, "vendor": "kube-ovn"},
		}
		op, err := a.C.Create(lrp)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op...)
	}
	routers, err := SelectRows[nbmodel.LogicalRouter](ctx, a.C)
	if err != nil {
		return nil, err
	}
	idx := -1
	for i, r := range routers {
		if r.Name == router {
			idx = i
		}
	}
	var more []ovsdb.Operation
	if idx < 0 {
		more, err = a.C.Create(&nbmodel.LogicalRouter{Name: router, Ports: names})
	} else {
		r := &routers[idx]
		more, err = a.C.Where(r).Mutate(r, model.Mutation{Field: &r.Ports, Mutator: ovsdb.MutateOperationInsert, Value: names})
	}
	if err != nil {
		return nil, err
	}
	res, err := a.Transact(ctx, append(ops, more...)...)
	if err != nil {
		return nil, fmt.Errorf("cannot add router ports %v: %w", ports, err)
	}
	out := make([]string, len(ports))
	for i := range ports {
		out[i] = res[i].UUID.GoUUID
	}
	return out, nil
}

// DeleteRouterPort removes the Logical_Router_Port named port from every
// router; the server then garbage-collects the port row.
func (a Admin) DeleteRouterPort(ctx context.Context, port string) error {
	rows, err := a.ReadRows(ctx)
	if err != nil {
		return err
	}
	var uuid string
	for _, p := range rows.Ports {
		if p.Name == port {
			uuid = p.UUID
		}
	}
	if uuid == "" {
		return fmt.Errorf("cannot delete router port %q: it does not exist", port)
	}
	var ops []ovsdb.Operation
	for _, r := range rows.Routers {
		op, err := a.C.Where(&r).Mutate(&r, model.Mutation{Field: &r.Ports, Mutator: ovsdb.MutateOperationDelete, Value: []string{uuid}})
		if err != nil {
			return err
		}
		ops = append(ops, op...)
	}
	_, err = a.Transact(ctx, ops...)
	return err
}

// AddGroup inserts an HA_Chassis_Group with the given external_ids and one
// HA_Chassis row per entry of chassis (names may repeat), and returns the
// group's UUID.
func (a Admin) AddGroup(ctx context.Context, name string, externalIDs map[string]string, chassis ...Chassis) (string, error) {
	var ops []ovsdb.Operation
	g := &nbmodel.HAChassisGroup{UUID: "newgroup", Name: name, ExternalIDs: externalIDs}
	for i, ch := range chassis {
		h := &nbmodel.HAChassis{UUID: fmt.Sprintf("newchassis%d", i), ChassisName: ch.Name, Priority: ch.Priority}
		op, err := a.C.Create(h)
		if err != nil {
			return "", err
		}
		ops = append(ops, op...)
		g.HaChassis = append(g.HaChassis, h.UUID)
	}
	op, err := a.C.Create(g)
	if err != nil {
		return "", err
	}
	res, err := a.Transact(ctx, append(ops, op...)...)
	if err != nil {
		return "", fmt.Errorf("cannot add group %q: %w", name, err)
	}
	return res[len(ops)].UUID.GoUUID, nil
}

// GroupUUID returns the UUID of the HA_Chassis_Group named name, or "".
func (a Admin) GroupUUID(ctx context.Context, name string) (string, error) {
	rows, err := a.ReadRows(ctx)
	if err != nil {
		return "", err
	}
	for _, g := range rows.Groups {
		if g.Name == name {
			return g.UUID, nil
		}
	}
	return "", nil
}

// SetPortGroup points the router port named port at the group with UUID
// group; an empty group clears the column.
func (a Admin) SetPortGroup(ctx context.Context, port, group string) error {
	p := &nbmodel.LogicalRouterPort{Name: port}
	if group != "" {
		p.HaChassisGroup = &group
	}
	ops, err := a.C.Where(p).Update(p, &p.HaChassisGroup)
	return a.updatePort(ctx, "group", port, ops, err)
}

// updatePort runs the update ops of the router port named port and checks
// that it existed.
func (a Admin) updatePort(ctx context.Context, what, port string, ops []ovsdb.Operation, err error) error {
	if err != nil {
		return err
	}
	res, err := a.Transact(ctx, ops...)
	if err != nil {
		return err
	}
	if res[0].Count != 1 {
		return fmt.Errorf("cannot set the %s of router port %q: it does not exist", what, port)
	}
	return nil
}

// SetPortMaps replaces the options and external_ids of the router port
// named port, as Kube-OVN or an operator writes them.
func (a Admin) SetPortMaps(ctx context.Context, port string, options, externalIDs map[string]string) error {
	p := &nbmodel.LogicalRouterPort{Name: port, Options: options, ExternalIDs: externalIDs}
	if p.Options == nil {
		p.Options = map[string]string{}
	}
	if p.ExternalIDs == nil {
		p.ExternalIDs = map[string]string{}
	}
	ops, err := a.C.Where(p).Update(p, &p.Options, &p.ExternalIDs)
	return a.updatePort(ctx, "options", port, ops, err)
}

// AddGatewayChassis gives the router port named port a Gateway_Chassis row,
// the legacy way of making it a gateway port.
func (a Admin) AddGatewayChassis(ctx context.Context, port, chassis string, priority int) error {
	gc := &nbmodel.GatewayChassis{UUID: "newgc", Name: port + "-" + chassis, ChassisName: chassis, Priority: priority}
	ops, err := a.C.Create(gc)
	if err != nil {
		return err
	}
	p := &nbmodel.LogicalRouterPort{Name: port}
	more, err := a.C.Where(p).Mutate(p, model.Mutation{Field: &p.GatewayChassis, Mutator: ovsdb.MutateOperationInsert, Value: []string{gc.UUID}})
	if err != nil {
		return err
	}
	_, err = a.Transact(ctx, append(ops, more...)...)
	return err
}

// Reset deletes every row of every table of the NB, leaving an empty
// database, so that one server can serve many test cases.
func (a Admin) Reset(ctx context.Context) error {
	s, err := Schema()
	if err != nil {
		return err
	}
	// libovsdb drops an empty where from a delete, so match every row with
	// a condition no UUID fails. Every table goes in one transaction, so no
	// strong reference is left to a deleted row when it commits.
	all := []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionNotEqual, Value: ovsdb.UUID{GoUUID: "00000000-0000-0000-0000-000000000000"}}}
	var ops []ovsdb.Operation
	for name := range s.Tables {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationDelete, Table: name, Where: all})
	}
	_, err = a.Transact(ctx, ops...)
	return err
}
