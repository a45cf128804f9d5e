package sim

import (
	"strings"
	"testing"
)

// TestVerifyInvariantsNamesEachFailure: nil when all hold; otherwise one
// line per failed invariant with its detail.
func TestVerifyInvariantsNamesEachFailure(t *testing.T) {
	w := world{}
	if err := joinFailed([]Invariant{w.uniqueIDs(), verdict("b", nil)}); err != nil {
		t.Errorf("all hold: %v", err)
	}
	err := joinFailed([]Invariant{verdict("a", []string{"x", "y"}), verdict("b", nil), verdict("c", []string{"z"})})
	if err == nil || err.Error() != "invariant \"a\": x; y\ninvariant \"c\": z" {
		t.Errorf("got %v", err)
	}
	if strings.Contains(err.Error(), `"b"`) {
		t.Errorf("a holding invariant is named: %v", err)
	}
}
