package ovngateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// nb is one northbound server under test and an admin client that sees
// every table.
type nb struct {
	endpoint string
	admin    client.Client
}

// backends starts each kind of NB server: libovsdb's in-memory one and a
// real ovsdb-server.
var backends = map[string]func(t *testing.T) nb{
	"InMemory": func(t *testing.T) nb {
		s := ovngatewaytest.StartInMemory(t)
		return nb{endpoint: s.Endpoint(), admin: ovngatewaytest.Connect(t, s.Endpoint())}
	},
	"Real": func(t *testing.T) nb {
		s := ovngatewaytest.StartReal(t)
		return nb{endpoint: s.Endpoint(), admin: ovngatewaytest.Connect(t, s.Endpoint())}
	},
}

// dial connects a gateway client to endpoint and closes it on cleanup.
func dial(t testing.TB, endpoint string) *ovngateway.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ovngateway.Dial(ctx, ovngateway.Config{
		Address:          endpoint,
		InactivityProbe:  10 * time.Second,
		ReconnectTimeout: 5 * time.Second,
		MaxBackoff:       20 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("Dial(%s): %v", endpoint, err)
	}
	t.Cleanup(c.Close)
	return c
}

// chassisOf is the chassis name tests give a node.
func chassisOf(node string) string { return "ch-" + node }

// gateway builds the wanted gateway of network ns/name on vpc-subnet with
// the given trunk nodes.
func gateway(t testing.TB, ns, name, vpc, subnet string, nodes ...string) ovngateway.Gateway {
	t.Helper()
	var cands []ovngateway.Candidate
	for _, n := range nodes {
		cands = append(cands, ovngateway.Candidate{Node: n, Chassis: chassisOf(n)})
	}
	n := ovngateway.Network{Namespace: ns, Name: name, RouterPort: ovngateway.RouterPortName(vpc, subnet)}
	gw, err := ovngateway.NewGateway(n, vpc, "pxtenant", cands)
	if err != nil {
		t.Fatal(err)
	}
	return gw
}

// wantGroup is the group Reconcile must leave for gw.
func wantGroup(gw ovngateway.Gateway, extra map[string]string) ovngatewaytest.Group {
	ids := map[string]string{ovngateway.OwnerKey: ovngateway.OwnerValue, ovngateway.NetworkKey: gw.ID()}
	for k, v := range extra {
		ids[k] = v
	}
	g := ovngatewaytest.Group{ExternalIDs: ids}
	for _, m := range gw.Members {
		g.Chassis = append(g.Chassis, ovngatewaytest.Chassis{Name: m.Chassis, Priority: m.Priority})
	}
	return g
}

func reconcile(t testing.TB, c *ovngateway.Client, gw ovngateway.Gateway) ovngateway.Outcome {
	t.Helper()
	o, err := c.Reconcile(context.Background(), gw)
	if err != nil {
		t.Fatalf("Reconcile(%s): %v", gw.ID(), err)
	}
	return o
}

// onEachBackend runs test on a fresh NB server of each kind.
func onEachBackend(t *testing.T, test func(t *testing.T, nb nb)) {
	for backend, start := range backends {
		t.Run(backend, func(t *testing.T) { test(t, start(t)) })
	}
}

// wantRows fails t with the difference when the NB rows are not want;
// what says which rows.
func wantRows(t testing.TB, admin client.Client, want ovngatewaytest.State, what string) {
	t.Helper()
	if diff := cmp.Diff(want, ovngatewaytest.Dump(t, admin)); diff != "" {
		t.Errorf("%s: -want +got:\n%s", what, diff)
	}
}

// gatewayState is the rows one gateway on testPort leaves: its group, and
// the port as given.
func gatewayState(gw ovngateway.Gateway, port ovngatewaytest.Port) ovngatewaytest.State {
	return ovngatewaytest.State{Groups: map[string]ovngatewaytest.Group{testGroup: wantGroup(gw, nil)}, Ports: map[string]ovngatewaytest.Port{testPort: port}}
}
