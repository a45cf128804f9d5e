package vlanalloc

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReasonAndResult(t *testing.T) {
	cases := map[string]struct {
		reason string
		err    error
		want   [2]string
	}{
		"Allocated": {reason: "success", err: nil, want: [2]string{"Allocated", "allocated"}},
		"Exhausted": {reason: "a full zone", err: fmt.Errorf("cannot allocate: %w", ErrExhausted), want: [2]string{"ZoneExhausted", "exhausted"}},
		"Namespace": {reason: "a namespace the selector refuses", err: fmt.Errorf("x: %w", ErrNamespaceNotAllowed), want: [2]string{"NamespaceNotAllowed", ""}},
		"Conflict":  {reason: "an ID held by another", err: fmt.Errorf("x: %w", &ConflictError{VID: 1}), want: [2]string{"VLANConflict", "conflict"}},
		"Unusable":  {reason: "a Vlan with ID 0", err: fmt.Errorf("x: %w", ErrUnusableVlan), want: [2]string{"VLANConflict", "conflict"}},
		"Provider":  {reason: "a Vlan on another provider network", err: &ProviderMismatchError{}, want: [2]string{"VLANProviderMismatch", "conflict"}},
		"API":       {reason: "an API failure is retried, not reported", err: errors.New("etcdserver: leader changed"), want: [2]string{"", ""}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, [2]string{Reason(tc.err), Result(tc.err)}); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
