package ovngatewaytest

import (
	"context"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/client"
)

// The functions below are Admin's methods for tests: they fail t on error.

// AddRouterPort is Admin.AddRouterPort for tests.
func AddRouterPort(t testing.TB, c client.Client, router, port string) string {
	t.Helper()
	u, err := Admin{c}.AddRouterPort(context.Background(), router, port)
	must(t, err)
	return u
}

// AddRouterPorts is Admin.AddRouterPorts for tests.
func AddRouterPorts(t testing.TB, c client.Client, router string, ports ...string) []string {
	t.Helper()
	u, err := Admin{c}.AddRouterPorts(context.Background(), router, ports...)
	must(t, err)
	return u
}

// DeleteRouterPort is Admin.DeleteRouterPort for tests.
func DeleteRouterPort(t testing.TB, c client.Client, port string) {
	t.Helper()
	must(t, Admin{c}.DeleteRouterPort(context.Background(), port))
}

// AddGroup is Admin.AddGroup for tests.
func AddGroup(t testing.TB, c client.Client, name string, externalIDs map[string]string, chassis ...Chassis) string {
	t.Helper()
	u, err := Admin{c}.AddGroup(context.Background(), name, externalIDs, chassis...)
	must(t, err)
	return u
}

// GroupUUID is Admin.GroupUUID for tests.
func GroupUUID(t testing.TB, c client.Client, name string) string {
	t.Helper()
	u, err := Admin{c}.GroupUUID(context.Background(), name)
	must(t, err)
	return u
}

// SetPortGroup is Admin.SetPortGroup for tests.
func SetPortGroup(t testing.TB, c client.Client, port, group string) {
	t.Helper()
	must(t, Admin{c}.SetPortGroup(context.Background(), port, group))
}

// SetPortMaps is Admin.SetPortMaps for tests.
func SetPortMaps(t testing.TB, c client.Client, port string, options, externalIDs map[string]string) {
	t.Helper()
	must(t, Admin{c}.SetPortMaps(context.Background(), port, options, externalIDs))
}

// AddGatewayChassis is Admin.AddGatewayChassis for tests.
func AddGatewayChassis(t testing.TB, c client.Client, port, chassis string, priority int) {
	t.Helper()
	must(t, Admin{c}.AddGatewayChassis(context.Background(), port, chassis, priority))
}

// Reset is Admin.Reset for tests.
func Reset(t testing.TB, c client.Client) {
	t.Helper()
	must(t, Admin{c}.Reset(context.Background()))
}

// Dump reads the gateway state straight from the server.
func Dump(t testing.TB, c client.Client) State {
	t.Helper()
	return ReadRows(t, c).State()
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
