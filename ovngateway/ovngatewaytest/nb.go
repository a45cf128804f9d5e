package ovngatewaytest

import (
	"context"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/pxsubstrate/pxsubstrate/internal/fakes/ovnnb"
	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

// State is what an NB holds about gateways, without UUIDs, for cmp.Diff.
type (
	State   = ovnnb.State
	Group   = ovnnb.Group
	Port    = ovnnb.Port
	Chassis = ovnnb.Chassis
)

// NB is a northbound database under test.
type NB struct {
	endpoint string
	admin    string
	mem      *ovnnb.InMemory
	real     *ovnnb.Real
	t        testing.TB
	c        client.Client
}

// NewInMemory starts libovsdb's in-memory server with the full NB schema.
func NewInMemory(t testing.TB) *NB {
	t.Helper()
	s := ovnnb.StartInMemory(t)
	return &NB{endpoint: s.Endpoint(), admin: s.DirectEndpoint(), mem: s, t: t}
}

// NewOVSDBServer starts a real ovsdb-server with the NB schema.
func NewOVSDBServer(t testing.TB) *NB {
	t.Helper()
	s := ovnnb.StartReal(t)
	return &NB{endpoint: s.Endpoint(), admin: s.Endpoint(), real: s, t: t}
}

// Endpoint is the OVSDB connection string for ovngateway.Config.Address.
func (n *NB) Endpoint() string { return n.endpoint }

// Dial connects an ovngateway client with short timeouts and closes it on
// cleanup.
func (n *NB) Dial(t testing.TB) *ovngateway.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ovngateway.Dial(ctx, ovngateway.Config{
		Address: n.endpoint, InactivityProbe: 10 * time.Second,
		ReconnectTimeout: 5 * time.Second, MaxBackoff: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("cannot dial the test NB: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// adminClient is a full-model client, reconnected after an outage of a real
// server.
func (n *NB) adminClient(t testing.TB) ovnnb.Admin {
	t.Helper()
	if n.c == nil || n.c.CurrentEndpoint() == "" || n.c.Cache() == nil {
		n.c = ovnnb.Connect(n.t, n.admin)
	}
	return ovnnb.Admin{C: n.c}
}

func (n *NB) must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// AddRouterPort adds the router port Kube-OVN creates for a subnet
// ("<vpc>-<subnet>") to router, creating the router when needed.
func (n *NB) AddRouterPort(t testing.TB, router, port string) {
	t.Helper()
	_, err := n.adminClient(t).AddRouterPort(context.Background(), router, port)
	n.must(t, err)
}

// DeleteRouterPort removes the router port named port.
func (n *NB) DeleteRouterPort(t testing.TB, port string) {
	t.Helper()
	n.must(t, n.adminClient(t).DeleteRouterPort(context.Background(), port))
}

// AddGroup inserts an HA_Chassis_Group as another client would, and returns
// its UUID.
func (n *NB) AddGroup(t testing.TB, name string, externalIDs map[string]string, chassis ...Chassis) string {
	t.Helper()
	u, err := n.adminClient(t).AddGroup(context.Background(), name, externalIDs, chassis...)
	n.must(t, err)
	return u
}

// SetPortGroup points a router port at a group UUID ("" clears it).
func (n *NB) SetPortGroup(t testing.TB, port, groupUUID string) {
	t.Helper()
	n.must(t, n.adminClient(t).SetPortGroup(context.Background(), port, groupUUID))
}

// AddGatewayChassis gives a router port a legacy Gateway_Chassis row.
func (n *NB) AddGatewayChassis(t testing.TB, port, chassis string, priority int) {
	t.Helper()
	n.must(t, n.adminClient(t).AddGatewayChassis(context.Background(), port, chassis, priority))
}

// State reads the gateway rows straight from the server.
func (n *NB) State(t testing.TB) State {
	t.Helper()
	s, err := n.adminClient(t).State(context.Background())
	n.must(t, err)
	return s
}

// Reset empties the database.
func (n *NB) Reset(t testing.TB) {
	t.Helper()
	n.must(t, n.adminClient(t).Reset(context.Background()))
}

// Outage takes the database away: the in-memory server cuts every
// connection and refuses new ones; ovsdb-server is killed with SIGKILL.
func (n *NB) Outage(t testing.TB) {
	t.Helper()
	if n.mem != nil {
		n.mem.Down()
		return
	}
	n.real.Kill()
}

// Recover brings the database back after Outage, with the rows it held.
func (n *NB) Recover(t testing.TB) {
	t.Helper()
	if n.mem != nil {
		n.must(t, n.mem.Up())
		return
	}
	n.must(t, n.real.Restart())
}
