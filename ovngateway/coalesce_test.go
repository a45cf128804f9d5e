package ovngateway_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// reconcileAtOnce calls Reconcile for every gateway at the same time, as
// the controller's workers do, and returns each call's outcome and error.
func reconcileAtOnce(c *ovngateway.Client, gws []ovngateway.Gateway) ([]ovngateway.Outcome, []error) {
	outs, errs := make([]ovngateway.Outcome, len(gws)), make([]error, len(gws))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, gw := range gws {
		wg.Go(func() {
			<-start
			outs[i], errs[i] = c.Reconcile(context.Background(), gw)
		})
	}
	close(start)
	wg.Wait()
	return outs, errs
}

// TestConcurrentReconcile: 100 Reconcile calls made at once converge their
// networks in fewer transactions than calls, each call getting its own
// outcome; a call for a router port that does not exist and a call with an
// invalid gateway made in the same burst get their own answers without
// failing the others; calls made at once over converged networks send no
// transaction.
func TestConcurrentReconcile(t *testing.T) {
	const n = 100
	onEachBackend(t, func(t *testing.T, nb nb) {
		var gws []ovngateway.Gateway
		want := ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{}, Ports: map[string]ovngatewaytest.Port{}}
		for i := range n {
			vpc, subnet := fmt.Sprintf("vpc%d", i%5), fmt.Sprintf("sub%d", i)
			ovngatewaytest.AddRouterPort(t, nb.admin, vpc, ovngateway.RouterPortName(vpc, subnet))
			gw := gateway(t, "tenant", fmt.Sprintf("net%d", i), vpc, subnet, threeNodes...)
			gws = append(gws, gw)
			want.Groups[gw.Group()] = wantGroup(gw, nil)
			want.Ports[gw.RouterPort] = ovngatewaytest.Port{Group: gw.Group()}
		}
		missing := gateway(t, "tenant", "no-port", "vpc0", "gone", threeNodes...)
		invalid := gateway(t, "tenant", "bad", "vpc0", "bad", threeNodes...)
		invalid.Members = append(invalid.Members, invalid.Members[0])
		c := dial(t, nb.endpoint)

		outs, errs := reconcileAtOnce(c, append(gws, missing, invalid))
		txns := c.Transactions()
		for i, gw := range gws {
			if errs[i] != nil || outs[i].Reason != ovngateway.ReasonChassisAssigned || outs[i].Group != gw.Group() ||
				outs[i].Active != gw.Members[0].Chassis || outs[i].Chassis != 3 || !outs[i].Changed {
				t.Errorf("network %s: got its outcome %+v, %v", gw.ID(), outs[i], errs[i])
			}
		}
		if o, err := outs[n], errs[n]; err != nil || o.Reason != ovngateway.ReasonRouterPortMissing || o.Group != missing.Group() || o.Changed {
			t.Errorf("the network without a router port: %+v, %v", o, err)
		}
		if err := errs[n+1]; !errors.Is(err, ovngateway.ErrInvalid) {
			t.Errorf("the invalid gateway: %v, want ErrInvalid", err)
		}
		wantRows(t, nb.admin, want, "rows after the concurrent calls")
		if txns >= n {
			t.Errorf("%d calls at once sent %d transactions, want fewer than calls", n, txns)
		}
		t.Logf("%d calls at once: %d transactions", n, txns)

		outs, errs = reconcileAtOnce(c, gws)
		for i, gw := range gws {
			if errs[i] != nil || outs[i].Reason != ovngateway.ReasonChassisAssigned || outs[i].Changed {
				t.Errorf("resync of network %s: %+v, %v", gw.ID(), outs[i], errs[i])
			}
		}
		if got := c.Transactions() - txns; got != 0 {
			t.Errorf("a resync at once of converged networks sent %d transactions, want 0", got)
		}
	})
}
