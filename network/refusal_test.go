package network

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

// TestAllocationRefusal maps vlanalloc's error categories to VLANAllocated
// reasons; the allocator itself knows no condition reasons.
func TestAllocationRefusal(t *testing.T) {
	cases := map[string]struct {
		reason string
		err    error
		want   string
		ok     bool
	}{
		"Success":   {reason: "success is no refusal", err: nil},
		"Exhausted": {reason: "a full zone", err: fmt.Errorf("cannot allocate: %w", vlanalloc.ErrExhausted), want: v1alpha1.ReasonZoneExhausted, ok: true},
		"Namespace": {reason: "a namespace the zone does not admit", err: fmt.Errorf("x: %w", vlanalloc.ErrNamespaceNotAllowed), want: v1alpha1.ReasonNamespaceNotAllowed, ok: true},
		"Conflict":  {reason: "an ID held by another", err: fmt.Errorf("x: %w", &vlanalloc.ConflictError{VID: 1}), want: v1alpha1.ReasonVLANConflict, ok: true},
		"NameTaken": {reason: "a Vlan of the subnet's name labelled for another network, as the peer spells it", err: fmt.Errorf("x: %w", &vlanalloc.ConflictError{VID: 1, Cause: vlanalloc.NameTaken}), want: v1alpha1.ReasonVLANNameTaken, ok: true},
		"Static":    {reason: "a static assignment's ID another holds, as the peer spells it", err: fmt.Errorf("x: %w", &vlanalloc.ConflictError{VID: 1, Cause: vlanalloc.StaticInUse}), want: v1alpha1.ReasonStaticVLANInUse, ok: true},
		"Unusable":  {reason: "a Vlan with ID 0", err: fmt.Errorf("x: %w", vlanalloc.ErrUnusableVlan), want: v1alpha1.ReasonVLANConflict, ok: true},
		"Provider":  {reason: "a Vlan on another provider network", err: &vlanalloc.ProviderMismatchError{}, want: v1alpha1.ReasonVLANProviderMismatch, ok: true},
		"API":       {reason: "an API failure is retried, not reported", err: errors.New("etcdserver: leader changed")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reason, msg, ok := allocationRefusal(tc.err)
			if diff := cmp.Diff([2]any{tc.want, tc.ok}, [2]any{reason, ok}); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
			if ok && msg != tc.err.Error() {
				t.Errorf("%s: message %q, want the error's %q", tc.reason, msg, tc.err.Error())
			}
		})
	}
}
