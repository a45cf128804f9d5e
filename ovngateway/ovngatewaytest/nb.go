package ovngatewaytest

import (
	"context"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/client"
)

// NB is a northbound database under test.
type NB struct {
	endpoint string
	admin    string
	mem      *InMemory
	real     *Real
	t        testing.TB
	c        client.Client
}

// NewInMemory starts libovsdb's in-memory server with the full NB schema.
func NewInMemory(t testing.TB) *NB {
	t.Helper()
	s := StartInMemory(t)
	return &NB{endpoint: s.Endpoint(), admin: s.DirectEndpoint(), mem: s, t: t}
}

// NewOVSDBServer starts a real ovsdb-server with the NB schema.
func NewOVSDBServer(t testing.TB) *NB {
	t.Helper()
	s := StartReal(t)
	return &NB{endpoint: s.Endpoint(), admin: s.Endpoint(), real: s, t: t}
}

// Endpoint is the OVSDB connection string for ovngateway.Config.Address.
func (n *NB) Endpoint() string { return n.endpoint }

// adminClient is a full-model client, reconnected after an outage of a real
// server.
func (n *NB) adminClient(t testing.TB) Admin {
	t.Helper()
	if n.c == nil || n.c.CurrentEndpoint() == "" || n.c.Cache() == nil {
		n.c = Connect(n.t, n.admin)
	}
	return Admin{C: n.c}
}

// AddRouterPort adds the router port Kube-OVN creates for a subnet
// ("<vpc>-<subnet>") to router, creating the router when needed.
func (n *NB) AddRouterPort(t testing.TB, router, port string) {
	t.Helper()
	_, err := n.adminClient(t).AddRouterPort(context.Background(), router, port)
	must(t, err)
}

// DeleteRouterPort removes the router port named port.
func (n *NB) DeleteRouterPort(t testing.TB, port string) {
	t.Helper()
	must(t, n.adminClient(t).DeleteRouterPort(context.Background(), port))
}

// AddGroup inserts an HA_Chassis_Group as another client would, and returns
// its UUID.
func (n *NB) AddGroup(t testing.TB, name string, externalIDs map[string]string, chassis ...Chassis) string {
	t.Helper()
	u, err := n.adminClient(t).AddGroup(context.Background(), name, externalIDs, chassis...)
	must(t, err)
	return u
}

// SetPortGroup points a router port at a group UUID ("" clears it).
func (n *NB) SetPortGroup(t testing.TB, port, groupUUID string) {
	t.Helper()
	must(t, n.adminClient(t).SetPortGroup(context.Background(), port, groupUUID))
}

// AddGatewayChassis gives a router port a legacy Gateway_Chassis row.
func (n *NB) AddGatewayChassis(t testing.TB, port, chassis string, priority int) {
	t.Helper()
	must(t, n.adminClient(t).AddGatewayChassis(context.Background(), port, chassis, priority))
}

// State reads the gateway rows straight from the server.
func (n *NB) State(t testing.TB) State {
	t.Helper()
	s, err := n.adminClient(t).State(context.Background())
	must(t, err)
	return s
}

// Reset empties the database.
func (n *NB) Reset(t testing.TB) {
	t.Helper()
	must(t, n.adminClient(t).Reset(context.Background()))
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
		must(t, n.mem.Up())
		return
	}
	must(t, n.real.Restart())
}
