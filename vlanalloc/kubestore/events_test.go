package kubestore_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/cache"

	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc/kubestore"
)

func TestEvents(t *testing.T) {
	zone := testZone(t, "100-102")
	idx := vlanalloc.NewIndex(zone, nil, nil)
	vlans, claims := kubestore.VlanEvents(idx), kubestore.ClaimEvents(idx)

	legacy := foreignVlan("legacy", 100, provider)
	vlans.OnAdd(legacy, true)
	vlans.OnAdd(foreignVlan("elsewhere", 101, "other"), false)
	mine := kubestore.ClaimObject(provider, vlanalloc.Reservation{VID: 101, Zone: "zone-a", Network: network(1), Vlan: "subnet-1"})
	claims.OnAdd(mine, false)
	claims.OnAdd(kubestore.ClaimObject("other", vlanalloc.Reservation{VID: 102, Zone: "zone-b", Network: network(2), Vlan: "subnet-2"}), false)
	if diff := cmp.Diff(vlanalloc.Counts{Total: 3, Allocated: 1, Free: 1, Networks: 1}, idx.Counts()); diff != "" {
		t.Fatalf("after adds: -want +got:\n%s", diff)
	}

	moved := legacy.DeepCopy()
	moved.Spec.ID = 102
	vlans.OnUpdate(legacy, moved)
	if free := idx.Free(); free.String() != "100" {
		t.Fatalf("after the Vlan moved to 102, free = %s, want 100", free.String())
	}

	vlans.OnDelete(cache.DeletedFinalStateUnknown{Key: "legacy", Obj: moved})
	claims.OnDelete(mine)
	if diff := cmp.Diff(vlanalloc.Counts{Total: 3, Allocated: 0, Free: 3, Networks: 0}, idx.Counts()); diff != "" {
		t.Fatalf("after deletes: -want +got:\n%s", diff)
	}
}
