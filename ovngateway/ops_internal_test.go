package ovngateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/nbdb"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// TestCreateOpsMatchTheMapper: the operations a new group is written with
// (its HA_Chassis rows, the group, the port's guard and update), which the
// package builds directly because they are most of what a converge sends,
// say on the wire exactly what libovsdb's mapper makes of the same models.
func TestCreateOpsMatchTheMapper(t *testing.T) {
	srv := ovngatewaytest.StartReal(t)
	_, c := dialInternal(t, srv.Endpoint())
	s, err := c.session()
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "candidates")
		var cands []Candidate
		for i := range n {
			cands = append(cands, Candidate{Node: fmt.Sprintf("node-%d", i), Chassis: rapid.StringMatching(`[a-z0-9-]{1,20}`).Draw(rt, "chassis") + strconv.Itoa(i)})
		}
		vpc := rapid.StringMatching(`[a-z][a-z0-9-]{0,15}`).Draw(rt, "vpc")
		net := Network{Namespace: "tenant-" + vpc, Name: "net", RouterPort: RouterPortName(vpc, "sub")}
		gw, err := NewGateway(net, vpc, "pxtenant", cands)
		if err != nil {
			rt.Fatal(err)
		}
		port := rapid.StringMatching(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`).Draw(rt, "port")
		prefix := "w" + strconv.Itoa(rapid.IntRange(1, 1<<20).Draw(rt, "seq"))
		got := &txn{prefix: prefix}
		v := view{port: &nbdb.LogicalRouterPort{UUID: port, Name: gw.RouterPort}}
		if err := s.buildInto(got, gw, v, plan{create: true, point: true}); err != nil {
			rt.Fatal(err)
		}
		want := mapperCreateOps(rt, s.nb, gw, prefix, port)
		if d := cmp.Diff(wire(rt, want), wire(rt, got.ops)); d != "" {
			rt.Fatalf("the operations differ from libovsdb's mapper (-mapper +built):\n%s", d)
		}
		if wantCounts := append(slices.Repeat([]int{anyCount}, len(gw.Members)+2), 1); !slices.Equal(got.counts, wantCounts) {
			rt.Fatalf("row counts %v, want %v", got.counts, wantCounts)
		}
	})
}

// mapperCreateOps builds the create-and-point operations through
// libovsdb's model API.
func mapperCreateOps(t *rapid.T, nb client.Client, gw Gateway, prefix, portUUID string) []ovsdb.Operation {
	var all []ovsdb.Operation
	add := func(ops []ovsdb.Operation, err error) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ops...)
	}
	var names []string
	for i, m := range gw.Members {
		name := "px" + prefix + "chassis" + strconv.Itoa(i)
		names = append(names, name)
		add(nb.Create(&nbdb.HAChassis{UUID: name, ChassisName: m.Chassis, Priority: m.Priority}))
	}
	group := "px" + prefix + "group"
	add(nb.Create(&nbdb.HAChassisGroup{UUID: group, Name: gw.Group(), HaChassis: names,
		ExternalIDs: map[string]string{OwnerKey: OwnerValue, NetworkKey: gw.ID()}}))
	zero := 0
	empty := &nbdb.LogicalRouterPort{UUID: portUUID}
	add(nb.Where(&nbdb.LogicalRouterPort{UUID: portUUID}).Wait(ovsdb.WaitConditionEqual, &zero, empty, &empty.HaChassisGroup, &empty.GatewayChassis))
	upd := &nbdb.LogicalRouterPort{UUID: portUUID, HaChassisGroup: &group}
	add(nb.Where(upd).Update(upd, &upd.HaChassisGroup))
	return all
}

// wire is ops as the server reads them: their JSON, with the pairs of every
// OVSDB map and the members of every set in a fixed order (a Go map has
// none).
func wire(t *rapid.T, ops []ovsdb.Operation) any {
	b, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return canonical(v)
}

func canonical(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = canonical(e)
		}
	case []any:
		for i, e := range x {
			x[i] = canonical(e)
		}
		if len(x) == 2 && (x[0] == "map" || x[0] == "set") {
			if elems, ok := x[1].([]any); ok {
				slices.SortFunc(elems, func(a, b any) int {
					ja, _ := json.Marshal(a)
					jb, _ := json.Marshal(b)
					return slices.Compare(ja, jb)
				})
			}
		}
	}
	return v
}
