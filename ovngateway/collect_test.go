package ovngateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/ovngatewaytest"
)

// TestCollect: only owned groups whose network is gone are deleted, after
// their ports are cleared; unowned and foreign groups are never touched.
func TestCollect(t *testing.T) {
	errLookup := errors.New("apiserver timeout")
	exists := func(_ context.Context, ns, name string) (bool, error) {
		switch ns + "/" + name {
		case "tenant-a/live":
			return true, nil
		case "tenant-b/unknown":
			return false, errLookup
		}
		return false, nil
	}
	onEachBackend(t, func(t *testing.T, nb nb) {
		a := nb.admin
		for _, p := range []string{"vpc1-live", "vpc1-gone", "vpc1-unowned"} {
			ovngatewaytest.AddRouterPort(t, a, "vpc1", p)
		}
		ch := ovngatewaytest.Chassis{Name: "ch-1", Priority: 100}
		ovngatewaytest.SetPortGroup(t, a, "vpc1-live", ovngatewaytest.AddGroup(t, a, "px-vpc1-live", owned("tenant-a/live"), ch))
		ovngatewaytest.SetPortGroup(t, a, "vpc1-gone", ovngatewaytest.AddGroup(t, a, "px-vpc1-gone", owned("tenant-a/gone"), ch))
		ovngatewaytest.SetPortGroup(t, a, "vpc1-unowned", ovngatewaytest.AddGroup(t, a, "px-vpc1-unowned", nil, ch))
		ovngatewaytest.AddGroup(t, a, "px-foreign", map[string]string{ovngateway.OwnerKey: "kube-ovn", ovngateway.NetworkKey: "tenant-a/gone"})
		ovngatewaytest.AddGroup(t, a, "px-garbled", owned("no-slash"))
		ovngatewaytest.AddGroup(t, a, "px-unknown", owned("tenant-b/unknown"))
		before := ovngatewaytest.Dump(t, a)

		c := dial(t, nb.endpoint)
		got, err := c.Collect(context.Background(), exists)
		if !errors.Is(err, errLookup) || !strings.Contains(err.Error(), `"px-unknown"`) {
			t.Errorf("Collect must report the failed lookup by group, got %v", err)
		}
		want := ovngateway.Collected{Deleted: []string{"px-vpc1-gone"}, Kept: 1, Skipped: []string{"px-garbled"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Collect: -want +got:\n%s", diff)
		}
		wantState := before
		delete(wantState.Groups, "px-vpc1-gone")
		wantState.Ports["vpc1-gone"] = ovngatewaytest.Port{}
		wantRows(t, a, wantState, "rows after Collect")
		if n := c.Transactions(); n != 1 {
			t.Errorf("Collect must send one transaction per deleted group, sent %d", n)
		}
	})
}
