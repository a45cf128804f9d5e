package ovngateway

import (
	"fmt"
	"maps"
	"slices"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/nbdb"
)

// anyCount marks an operation whose row count is not checked.
const anyCount = -1

// txn is one transaction under construction: its operations and, for each,
// the number of rows it must touch (anyCount when it does not matter).
type txn struct {
	ops    []ovsdb.Operation
	counts []int
	// prefix keeps the named UUIDs of each network apart when several
	// networks share a transaction.
	prefix string
}

// named is a named UUID (RFC 7047 5.1) for a row inserted by the network
// being built.
func (t *txn) named(what string) string { return "px" + t.prefix + what }

func (t *txn) add(count int, ops []ovsdb.Operation, err error) error {
	if err != nil {
		return err
	}
	for _, op := range ops {
		t.ops = append(t.ops, op)
		t.counts = append(t.counts, count)
	}
	return nil
}

// build turns a plan into the operations of one transaction.
func (s *session) build(gw Gateway, v view, p plan) (*txn, error) {
	t := &txn{}
	if err := s.buildInto(t, gw, v, p); err != nil {
		return nil, err
	}
	return t, nil
}

// buildInto appends the operations of a plan to t.
func (s *session) buildInto(t *txn, gw Gateway, v view, p plan) error {
	groupRef := t.named("group")
	var err error
	if p.create {
		err = s.createGroup(t, gw)
	} else {
		groupRef = v.group.UUID
		err = s.updateGroup(t, gw, v, p)
	}
	if err != nil {
		return fmt.Errorf("cannot build the NB transaction for network %q: %w", gw.ID(), err)
	}
	if p.point {
		if err := s.pointPort(t, v.port.UUID, groupRef); err != nil {
			return fmt.Errorf("cannot build the NB transaction for network %q: %w", gw.ID(), err)
		}
	}
	if p.mtu {
		if err := s.setPortMTU(t, v.port, portMTU(gw, v.port), portMarks(gw, v.port)); err != nil {
			return fmt.Errorf("cannot build the NB transaction for network %q: %w", gw.ID(), err)
		}
	}
	return nil
}

// setPortMTU writes the port's options and external_ids, guarded by a wait
// that both are still the maps read, so a key someone else writes
// meanwhile is neither lost nor overwritten: the server refuses the
// transaction and the next pass decides on the new rows.
func (s *session) setPortMTU(t *txn, port *nbdb.LogicalRouterPort, opts, ids map[string]string) error {
	zero := 0
	seen := &nbdb.LogicalRouterPort{Options: nonNil(port.Options), ExternalIDs: nonNil(port.ExternalIDs)}
	ops, err := s.nb.Where(&nbdb.LogicalRouterPort{UUID: port.UUID}).
		Wait(ovsdb.WaitConditionEqual, &zero, seen, &seen.Options, &seen.ExternalIDs)
	if err := t.add(anyCount, ops, err); err != nil {
		return err
	}
	upd := &nbdb.LogicalRouterPort{UUID: port.UUID, Options: opts, ExternalIDs: ids}
	ops, err = s.nb.Where(upd).Update(upd, &upd.Options, &upd.ExternalIDs)
	return t.add(1, ops, err)
}

// nonNil is m, or an empty map for nil, so that a wait compares an empty
// column instead of skipping it.
func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// insertMembers adds HA_Chassis rows with named UUIDs and returns the names.
func (s *session) insertMembers(t *txn, members []Member) ([]string, error) {
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = t.named(fmt.Sprintf("chassis%d", i))
		row := &nbdb.HAChassis{UUID: names[i], ChassisName: m.Chassis, Priority: m.Priority}
		ops, err := s.nb.Create(row)
		if err := t.add(anyCount, ops, err); err != nil {
			return nil, err
		}
	}
	return names, nil
}

func (s *session) createGroup(t *txn, gw Gateway) error {
	names, err := s.insertMembers(t, gw.Members)
	if err != nil {
		return err
	}
	g := &nbdb.HAChassisGroup{
		UUID: t.named("group"), Name: gw.Group(), HaChassis: names,
		ExternalIDs: map[string]string{OwnerKey: OwnerValue, NetworkKey: gw.ID()},
	}
	ops, err := s.nb.Create(g)
	return t.add(anyCount, ops, err)
}

func (s *session) updateGroup(t *txn, gw Gateway, v view, p plan) error {
	g := v.group
	if p.adopt {
		if err := s.adopt(t, gw, g); err != nil {
			return err
		}
	}
	for _, u := range slices.Sorted(maps.Keys(p.update)) {
		h := &nbdb.HAChassis{UUID: u, Priority: p.update[u]}
		ops, err := s.nb.Where(h).Update(h, &h.Priority)
		if err := t.add(1, ops, err); err != nil {
			return err
		}
	}
	sel := &nbdb.HAChassisGroup{UUID: g.UUID}
	if len(p.remove) > 0 {
		ops, err := s.nb.Where(sel).Mutate(sel, model.Mutation{Field: &sel.HaChassis, Mutator: ovsdb.MutateOperationDelete, Value: p.remove})
		if err := t.add(1, ops, err); err != nil {
			return err
		}
	}
	if len(p.insert) > 0 {
		names, err := s.insertMembers(t, p.insert)
		if err != nil {
			return err
		}
		ops, err := s.nb.Where(sel).Mutate(sel, model.Mutation{Field: &sel.HaChassis, Mutator: ovsdb.MutateOperationInsert, Value: names})
		if err := t.add(1, ops, err); err != nil {
			return err
		}
	}
	return nil
}

// adopt tags an untagged group, guarded by a wait that its external_ids are
// still the ones read, so a tag someone else writes meanwhile is not lost.
func (s *session) adopt(t *txn, gw Gateway, g *nbdb.HAChassisGroup) error {
	zero := 0
	seen := &nbdb.HAChassisGroup{ExternalIDs: g.ExternalIDs}
	if seen.ExternalIDs == nil {
		seen.ExternalIDs = map[string]string{}
	}
	ops, err := s.nb.Where(&nbdb.HAChassisGroup{UUID: g.UUID}).Wait(ovsdb.WaitConditionEqual, &zero, seen, &seen.ExternalIDs)
	if err := t.add(anyCount, ops, err); err != nil {
		return err
	}
	ids := maps.Clone(g.ExternalIDs)
	if ids == nil {
		ids = map[string]string{}
	}
	ids[OwnerKey], ids[NetworkKey] = OwnerValue, gw.ID()
	upd := &nbdb.HAChassisGroup{UUID: g.UUID, ExternalIDs: ids}
	ops, err = s.nb.Where(upd).Update(upd, &upd.ExternalIDs)
	return t.add(1, ops, err)
}

// pointPort sets the ha_chassis_group of the port row portUUID to groupRef.
// A wait in the same transaction makes the server refuse the write unless
// that row still exists and has neither an HA_Chassis_Group nor
// Gateway_Chassis rows; a port deleted and created again under the same
// name is a new row, so a decision on the old one is refused too. Both
// operations select the row by UUID, which the server looks up directly
// instead of scanning the table by name. (libovsdb's in-memory server skips
// empty values when it compares a wait's rows, so only a real ovsdb-server
// enforces this guard.)
func (s *session) pointPort(t *txn, portUUID, groupRef string) error {
	zero := 0
	want := &nbdb.LogicalRouterPort{UUID: portUUID}
	ops, err := s.nb.Where(&nbdb.LogicalRouterPort{UUID: portUUID}).
		Wait(ovsdb.WaitConditionEqual, &zero, want, &want.HaChassisGroup, &want.GatewayChassis)
	if err := t.add(anyCount, ops, err); err != nil {
		return err
	}
	upd := &nbdb.LogicalRouterPort{UUID: portUUID, HaChassisGroup: &groupRef}
	ops, err = s.nb.Where(upd).Update(upd, &upd.HaChassisGroup)
	return t.add(1, ops, err)
}

// modelCond is an equality condition on a model field.
func modelCond(field, value any) model.Condition {
	return model.Condition{Field: field, Function: ovsdb.ConditionEqual, Value: value}
}
