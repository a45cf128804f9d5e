package ovngateway

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/nbdb"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// TestMonitorColumns: the monitor asks for exactly the columns the models
// hold, each of them a column of the schema.
func TestMonitorColumns(t *testing.T) {
	want := map[string][]string{
		nbdb.HAChassisGroupTable:    {"external_ids", "ha_chassis", "name"},
		nbdb.HAChassisTable:         {"chassis_name", "priority"},
		nbdb.LogicalRouterPortTable: {"external_ids", "gateway_chassis", "ha_chassis_group", "name", "options"},
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

// TestOnChange: a monitored client reports every change to its cache; one
// whose connection the server closed (libovsdb then drops the cache) is
// ErrNotConnected instead of a crash.
func TestOnChange(t *testing.T) {
	s := ovngatewaytest.StartInMemory(t)
	m, err := Model()
	if err != nil {
		t.Fatal(err)
	}
	nb, err := client.NewOVSDBClient(m, client.WithEndpoint(s.Endpoint()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := nb.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := nb.Monitor(ctx, monitor()); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 1)
	ports := make(chan string, 4)
	if err := onChange(nb, func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}, func(name string) { ports <- name }); err != nil {
		t.Fatalf("connected client: %v", err)
	}
	admin := ovngatewaytest.Connect(t, s.DirectEndpoint())
	ovngatewaytest.AddRouterPort(t, admin, "vpc1", "vpc1-sub1")
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no change reported after a router port was added")
	}
	select {
	case name := <-ports:
		if name != "vpc1-sub1" {
			t.Errorf("router port reported as %q, want vpc1-sub1", name)
		}
	case <-ctx.Done():
		t.Fatal("the new router port was not reported by name")
	}
	// A change that adds no router port reports none.
	ovngatewaytest.AddGroup(t, admin, "some-group", nil)
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no change reported after a group was added")
	}
	select {
	case name := <-ports:
		t.Errorf("an HA_Chassis_Group reported router port %q", name)
	default:
	}

	s.Down()
	for nb.Cache() != nil {
		select {
		case <-ctx.Done():
			t.Fatal("libovsdb kept the cache after the server closed the connection")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := onChange(nb, func() {}, nil); !errors.Is(err, client.ErrNotConnected) {
		t.Fatalf("disconnected client: got %v, want ErrNotConnected", err)
	}
}
