package ovngateway

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

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

// push appends one operation built directly, with its row count.
func (t *txn) push(count int, op ovsdb.Operation) {
	t.ops = append(t.ops, op)
	t.counts = append(t.counts, count)
}

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
	// A new group's members, the group, and the port's wait and update:
	// the common case, allocated once.
	t.ops = slices.Grow(t.ops, len(gw.Members)+3)
	t.counts = slices.Grow(t.counts, len(gw.Members)+3)
	groupRef := t.named("group")
	if p.create {
		createGroup(t, gw)
	} else {
		groupRef = v.group.UUID
		if err := s.updateGroup(t, gw, v, p); err != nil {
			return fmt.Errorf("cannot build the NB transaction for network %q: %w", gw.ID(), err)
		}
	}
	if p.point {
		pointPort(t, v.port.UUID, groupRef)
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

// The operations of a new group (insertMembers, createGroup, pointPort)
// are built directly rather than through libovsdb's mapper, whose
// reflection took a tenth of the client's CPU time in a converge of 1,000
// networks. TestCreateOpsMatchTheMapper shows they are the mapper's, byte
// for byte once map and set order is set aside. The rarer repairs below
// use the mapper.

// insertMembers adds HA_Chassis rows with named UUIDs and returns the names.
func insertMembers(t *txn, members []Member) []string {
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = t.named("chassis" + strconv.Itoa(i))
		t.push(anyCount, ovsdb.Operation{
			Op: ovsdb.OperationInsert, Table: nbdb.HAChassisTable, UUIDName: names[i],
			Row: ovsdb.Row{"chassis_name": m.Chassis, "priority": m.Priority},
		})
	}
	return names
}

// createGroup inserts the network's group, tagged, with every wanted member.
func createGroup(t *txn, gw Gateway) {
	names := insertMembers(t, gw.Members)
	refs := make([]any, len(names))
	for i, n := range names {
		refs[i] = ovsdb.UUID{GoUUID: n}
	}
	t.push(anyCount, ovsdb.Operation{
		Op: ovsdb.OperationInsert, Table: nbdb.HAChassisGroupTable, UUIDName: t.named("group"),
		Row: ovsdb.Row{
			"name":         gw.Group(),
			"ha_chassis":   ovsdb.OvsSet{GoSet: refs},
			"external_ids": ovsdb.OvsMap{GoMap: map[any]any{OwnerKey: OwnerValue, NetworkKey: gw.ID()}},
		},
	})
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
		names := insertMembers(t, p.insert)
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
func pointPort(t *txn, portUUID, groupRef string) {
	empty := ovsdb.OvsSet{GoSet: []any{}}
	zero := 0
	t.push(anyCount, ovsdb.Operation{
		Op: ovsdb.OperationWait, Table: nbdb.LogicalRouterPortTable, Where: byUUID(portUUID),
		Columns: []string{"ha_chassis_group", "gateway_chassis"}, Until: string(ovsdb.WaitConditionEqual), Timeout: &zero,
		Rows: []ovsdb.Row{{"ha_chassis_group": empty, "gateway_chassis": empty}},
	})
	t.push(1, ovsdb.Operation{
		Op: ovsdb.OperationUpdate, Table: nbdb.LogicalRouterPortTable, Where: byUUID(portUUID),
		Row: ovsdb.Row{"ha_chassis_group": ovsdb.UUID{GoUUID: groupRef}},
	})
}

// byUUID selects one row by its UUID, which the server looks up directly.
func byUUID(uuid string) []ovsdb.Condition {
	return []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: uuid}}}
}

// modelCond is an equality condition on a model field.
func modelCond(field, value any) model.Condition {
	return model.Condition{Field: field, Function: ovsdb.ConditionEqual, Value: value}
}
