package ovngateway

import (
	"slices"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/nbdb"
)

// TestMonitorColumns: the monitor asks for exactly the columns the models
// hold, each of them a column of the schema.
func TestMonitorColumns(t *testing.T) {
	want := map[string][]string{
		nbdb.HAChassisGroupTable:    {"external_ids", "ha_chassis", "name"},
		nbdb.HAChassisTable:         {"chassis_name", "priority"},
		nbdb.LogicalRouterPortTable: {"gateway_chassis", "ha_chassis_group", "name"},
	}
	schema := nbdb.Schema()
	m := monitor()
	if len(m.Tables) != len(want) {
		t.Fatalf("monitor asks for %d tables, want %d", len(m.Tables), len(want))
	}
	for _, tm := range m.Tables {
		got := slices.Sorted(slices.Values(tm.Fields))
		if !slices.Equal(got, want[tm.Table]) {
			t.Errorf("table %s: monitored columns %v, want %v", tm.Table, got, want[tm.Table])
		}
		for _, c := range tm.Fields {
			if schema.Table(tm.Table).Column(c) == nil {
				t.Errorf("table %s: column %q is not in the schema", tm.Table, c)
			}
		}
	}
}
