package sim

import (
	"context"
	"fmt"
	"sort"

	libovsdb "github.com/ovn-kubernetes/libovsdb/client"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest/nbmodel"
)

// RouterPorts is the part of an OVN northbound database the simulated
// Kube-OVN writes: a Logical_Router per VPC and, in it, a
// Logical_Router_Port per subnet of that VPC.
type RouterPorts interface {
	// RouterPorts returns the router ports Kube-OVN made, by port name, with
	// the name of the router each sits in.
	RouterPorts(ctx context.Context) (map[string]string, error)
	// AddRouterPort creates the router when it is missing and adds the port
	// to it.
	AddRouterPort(ctx context.Context, router, port string) error
	// DeleteRouterPort removes the port from its router.
	DeleteRouterPort(ctx context.Context, port string) error
}

// kubeOVNVendor is the external_ids vendor of rows Kube-OVN writes.
const kubeOVNVendor = "kube-ovn"

// OVNNB is RouterPorts over a real northbound database, written through a
// libovsdb client that holds the full NB model (see ovngatewaytest.Dial). It reads
// straight from the server, never from the client's cache.
type OVNNB struct {
	admin ovngatewaytest.Admin
}

var _ RouterPorts = OVNNB{}

// NewOVNNB returns the Kube-OVN side of the NB that c reaches.
func NewOVNNB(c libovsdb.Client) OVNNB { return OVNNB{admin: ovngatewaytest.Admin{C: c}} }

// RouterPorts lists the Logical_Router_Port rows tagged vendor=kube-ovn.
func (n OVNNB) RouterPorts(ctx context.Context) (map[string]string, error) {
	ports, err := ovngatewaytest.SelectRows[nbmodel.LogicalRouterPort](ctx, n.admin.C)
	if err != nil {
		return nil, fmt.Errorf("cannot list the router ports: %w", err)
	}
	out := map[string]string{}
	for _, p := range ports {
		if p.ExternalIDs["vendor"] == kubeOVNVendor {
			out[p.Name] = p.ExternalIDs["lr"]
		}
	}
	return out, nil
}

// AddRouterPort adds the port, and the router when it is missing.
func (n OVNNB) AddRouterPort(ctx context.Context, router, port string) error {
	if _, err := n.admin.AddRouterPort(ctx, router, port); err != nil {
		return fmt.Errorf("cannot add router port %q to router %q: %w", port, router, err)
	}
	return nil
}

// DeleteRouterPort removes the port from every router.
func (n OVNNB) DeleteRouterPort(ctx context.Context, port string) error {
	if err := n.admin.DeleteRouterPort(ctx, port); err != nil {
		return fmt.Errorf("cannot delete router port %q: %w", port, err)
	}
	return nil
}

// routerPorts makes the NB hold, for every Subnet of a VPC, the router port
// "<vpc>-<subnet>" in the VPC's router, from the moment the Subnet exists
// until it is gone, as Kube-OVN does.
func (w *World) routerPorts(ctx context.Context, subnets []subnetRef) (bool, error) {
	if w.NB == nil {
		return false, nil
	}
	want := map[string]string{}
	for _, s := range subnets {
		if s.vpc != "" {
			want[ovngateway.RouterPortName(s.vpc, s.name)] = s.vpc
		}
	}
	return SyncRouterPorts(ctx, w.NB, want)
}

// SyncRouterPorts makes Kube-OVN's router ports in nb exactly want (port
// name -> router name): it adds the missing ones (and their routers) and
// removes the others, in name order, and reports whether it changed
// anything. It is the one Kube-OVN stand-in for router ports: World's, and
// the controller tests' (controllertest.KubeOVN).
func SyncRouterPorts(ctx context.Context, nb RouterPorts, want map[string]string) (bool, error) {
	have, err := nb.RouterPorts(ctx)
	if err != nil {
		return false, err
	}
	changed := false
	for _, port := range sortedNames(want) {
		if _, ok := have[port]; ok {
			continue
		}
		if err := nb.AddRouterPort(ctx, want[port], port); err != nil {
			return changed, err
		}
		changed = true
	}
	for _, port := range sortedNames(have) {
		if _, ok := want[port]; ok {
			continue
		}
		if err := nb.DeleteRouterPort(ctx, port); err != nil {
			return changed, err
		}
		changed = true
	}
	return changed, nil
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
