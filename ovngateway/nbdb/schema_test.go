package nbdb_test

import (
	"reflect"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/nbdb"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// TestSchemaIsACutOfTheFullSchema: every table and column of
// gateway.ovsschema is exactly the one of the full OVN NB schema under
// test, and the tables keep their root flag and indexes, so the generated
// models match what an ovsdb-server serves.
func TestSchemaIsACutOfTheFullSchema(t *testing.T) {
	full, err := ovngatewaytest.Schema()
	if err != nil {
		t.Fatal(err)
	}
	cut := nbdb.Schema()
	if cut.Name != full.Name {
		t.Fatalf("database %q, want %q", cut.Name, full.Name)
	}
	for name, table := range cut.Tables {
		ft, ok := full.Tables[name]
		if !ok {
			t.Errorf("table %s is not in the full schema", name)
			continue
		}
		if table.IsRoot != ft.IsRoot || !reflect.DeepEqual(table.Indexes, ft.Indexes) {
			t.Errorf("table %s: isRoot %v indexes %v, full schema has %v %v", name, table.IsRoot, table.Indexes, ft.IsRoot, ft.Indexes)
		}
		for col, cs := range table.Columns {
			fc, ok := ft.Columns[col]
			if !ok {
				t.Errorf("column %s.%s is not in the full schema", name, col)
				continue
			}
			if !reflect.DeepEqual(cs, fc) {
				t.Errorf("column %s.%s differs from the full schema: %+v vs %+v", name, col, cs, fc)
			}
		}
	}
	if len(cut.Tables) != 3 {
		t.Errorf("the gateway models hold %d tables, want the 3 ovngateway uses", len(cut.Tables))
	}
}
