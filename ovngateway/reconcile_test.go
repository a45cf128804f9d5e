package ovngateway_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

func TestReconcileCreates(t *testing.T) {
	onEachBackend(t, func(t *testing.T, nb nb) {
		ovngatewaytest.AddRouterPort(t, nb.admin, "vpc1", "vpc1-sub1")
		c := dial(t, nb.endpoint)
		gw := gateway(t, "tenant-a", "net1", "vpc1", "sub1", "node-1", "node-2", "node-3")
		got := reconcile(t, c, gw)
		want := ovngateway.Outcome{Reason: ovngateway.ReasonChassisAssigned, Group: "px-vpc1-sub1", Chassis: 3, Active: gw.Members[0].Chassis, Changed: true}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(ovngateway.Outcome{}, "Message")); diff != "" {
			t.Errorf("first Reconcile: -want +got:\n%s", diff)
		}
		wantState := ovngatewaytest.State{
			Groups: map[string]ovngatewaytest.Group{"px-vpc1-sub1": wantGroup(gw, nil)},
			Ports:  map[string]ovngatewaytest.Port{"vpc1-sub1": {Group: "px-vpc1-sub1"}},
		}
		wantRows(t, nb.admin, wantState, "rows after the first Reconcile")
		if n := c.Transactions(); n != 1 {
			t.Errorf("the first Reconcile must send exactly one transaction, sent %d", n)
		}
		again := reconcile(t, c, gw)
		if again.Changed || c.Transactions() != 1 {
			t.Errorf("a second Reconcile must write nothing: changed=%v transactions=%d", again.Changed, c.Transactions())
		}
		wantRows(t, nb.admin, wantState, "rows after the second Reconcile")
	})
}
