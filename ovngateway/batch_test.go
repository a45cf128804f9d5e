package ovngateway_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// TestReconcileAll: 110 networks converge in one transaction per
// BatchSize networks (three of 50, 50 and 10); a second pass sends none; a
// Node change re-ranks every VPC in as many more; a router port listed
// twice is refused without holding back others.
func TestReconcileAll(t *testing.T) {
	const n = 110
	const batches = (n + ovngateway.BatchSize - 1) / ovngateway.BatchSize
	onEachBackend(t, func(t *testing.T, nb nb) {
		var gws []ovngateway.Gateway
		ports := map[string][]string{}
		for i := range n {
			vpc := fmt.Sprintf("vpc%d", i%7)
			ports[vpc] = append(ports[vpc], ovngateway.RouterPortName(vpc, fmt.Sprintf("sub%d", i)))
			gws = append(gws, gateway(t, "tenant", fmt.Sprintf("net%d", i), vpc, fmt.Sprintf("sub%d", i), threeNodes...))
		}
		for vpc, ps := range ports {
			ovngatewaytest.AddRouterPorts(t, nb.admin, vpc, ps...)
		}
		c := dial(t, nb.endpoint)
		check := func(step string, gws []ovngateway.Gateway, wantTxns uint64, wantChanged bool) {
			t.Helper()
			before := c.Transactions()
			outs, errs := c.ReconcileAll(context.Background(), gws)
			for i := range gws {
				if errs[i] != nil || outs[i].Reason != ovngateway.ReasonChassisAssigned || outs[i].Changed != wantChanged {
					t.Fatalf("%s: network %d: %+v, %v", step, i, outs[i], errs[i])
				}
			}
			if got := c.Transactions() - before; got != wantTxns {
				t.Errorf("%s: %d transactions, want %d", step, got, wantTxns)
			}
			want := ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{}, Ports: map[string]ovngatewaytest.Port{}}
			for _, gw := range gws {
				want.Groups[gw.Group()] = wantGroup(gw, nil)
				want.Ports[gw.RouterPort] = ovngatewaytest.Port{Group: gw.Group()}
			}
			wantRows(t, nb.admin, want, step+": rows")
		}
		check("converge", gws, batches, true)
		check("resync", gws, 0, false)
		var joined []ovngateway.Gateway
		for i, gw := range gws {
			joined = append(joined, gateway(t, "tenant", gw.Name, fmt.Sprintf("vpc%d", i%7), fmt.Sprintf("sub%d", i), "node-1", "node-2", "node-3", "node-4"))
		}
		check("node-4 joins", joined, batches, true)

		outs, errs := c.ReconcileAll(context.Background(), []ovngateway.Gateway{joined[0], joined[0]})
		if errs[0] != nil || outs[0].Reason != ovngateway.ReasonChassisAssigned || !errors.Is(errs[1], ovngateway.ErrInvalid) {
			t.Errorf("a port listed twice: %+v %v", outs, errs)
		}
	})
}
