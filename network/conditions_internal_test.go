package network

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRemoveConditionKeepsSliceWhenAbsent: removing a condition a network
// does not carry leaves its conditions as they are (the same backing
// array, no copy that outlives the pass); removing one it carries drops it.
func TestRemoveConditionKeepsSliceWhenAbsent(t *testing.T) {
	conds := []metav1.Condition{{Type: "Ready"}, {Type: "VLANAllocated"}, {Type: "SwitchDeleted"}}
	live := conds[:2:2]
	before := &live[0]
	removeCondition(&live, "SwitchDeleted")
	if len(live) != 2 || &live[0] != before || cap(live) != 2 {
		t.Fatalf("removing an absent condition changed the slice: len %d cap %d, same array %v", len(live), cap(live), &live[0] == before)
	}
	removeCondition(&conds, "SwitchDeleted")
	if len(conds) != 2 || conds[0].Type != "Ready" || conds[1].Type != "VLANAllocated" {
		t.Fatalf("after removing SwitchDeleted: %v", conds)
	}
}
