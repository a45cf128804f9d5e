package vlanalloc

import (
	"errors"
	"testing"
)

// TestNamespaceCap: with MaxPerNamespace 1, a second network of a namespace
// gets no new ID while a network of another namespace and a statically
// pinned one do; once the first one's hold is gone, the second gets an ID.
func TestNamespaceCap(t *testing.T) {
	a := NetworkRef{Namespace: "tenant-a", Name: "one"}
	b := NetworkRef{Namespace: "tenant-a", Name: "two"}
	pinned := NetworkRef{Namespace: "tenant-a", Name: "pinned"}
	x := NewIndex(mustZone(t, ZoneSpec{Ranges: []string{"100-110"}, MaxPerNamespace: 1,
		Static: []StaticAssignment{{Network: pinned, VID: 200}}}), nil, nil)
	if vid, err := x.Allocate(Claim{Network: a, Vlan: "one"}); err != nil || vid != 100 {
		t.Fatalf("first network of tenant-a: %d, %v; want 100", vid, err)
	}
	_, err := x.Allocate(Claim{Network: b, Vlan: "two"})
	var ce *NamespaceCapError
	if !errors.Is(err, ErrNamespaceCap) || !errors.As(err, &ce) || ce.Held != 1 || ce.Cap != 1 || ce.Network != b {
		t.Fatalf("second network of tenant-a: %v (%+v); want a NamespaceCapError, 1 held of 1", err, ce)
	}
	if vid, err := x.Allocate(claimFor("other")); err != nil || vid != 101 {
		t.Fatalf("network of another namespace: %d, %v; want 101", vid, err)
	}
	if vid, err := x.Allocate(Claim{Network: pinned, Vlan: "pinned"}); err != nil || vid != 200 {
		t.Fatalf("statically pinned network of tenant-a: %d, %v; want 200", vid, err)
	}
	x.Release(a)
	x.Release(pinned)
	if vid, err := x.Allocate(Claim{Network: b, Vlan: "two"}); err != nil || vid != 100 {
		t.Fatalf("second network of tenant-a after the first released: %d, %v; want 100", vid, err)
	}
}
