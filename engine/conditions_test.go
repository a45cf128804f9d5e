package engine_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/internal/widget"
)

var (
	t0 = metav1.NewTime(epoch)
	t1 = metav1.NewTime(epoch.Add(time.Hour))
)

func cond(typ string, status metav1.ConditionStatus, gen int64, at metav1.Time, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, ObservedGeneration: gen, LastTransitionTime: at, Reason: reason, Message: msg}
}

// stateAt returns a State for a widget of generation gen whose clock reads at.
func stateAt(gen int64, at time.Time) *engine.State[*widget.Widget] {
	w := widget.New(ns, "w", "v")
	w.Generation = gen
	s := engine.NewState(w, nil)
	c := newClock()
	c.SetTime(at)
	s.Clock = c
	return s
}

func TestSetCondition(t *testing.T) {
	type args struct {
		conds           []metav1.Condition
		gen             int64
		status          metav1.ConditionStatus
		reason, message string
	}
	type want struct {
		conds   []metav1.Condition
		changed bool
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"New": {
			reason: "A new condition gets the generation and the current time.",
			args:   args{gen: 3, status: metav1.ConditionTrue, reason: "Allocated", message: "vlan 100"},
			want:   want{conds: []metav1.Condition{cond("VLANAllocated", metav1.ConditionTrue, 3, t1, "Allocated", "vlan 100")}, changed: true},
		},
		"SameStatusKeepsTime": {
			reason: "A status that does not change keeps lastTransitionTime; reason, message and generation are updated.",
			args: args{
				conds: []metav1.Condition{cond("VLANAllocated", metav1.ConditionFalse, 1, t0, "ZoneExhausted", "none")},
				gen:   2, status: metav1.ConditionFalse, reason: "ZoneNotFound", message: "no zone",
			},
			want: want{conds: []metav1.Condition{cond("VLANAllocated", metav1.ConditionFalse, 2, t0, "ZoneNotFound", "no zone")}, changed: true},
		},
		"StatusChangeMovesTime": {
			reason: "A status change moves lastTransitionTime to now.",
			args: args{
				conds: []metav1.Condition{cond("VLANAllocated", metav1.ConditionFalse, 1, t0, "ZoneExhausted", "none")},
				gen:   1, status: metav1.ConditionTrue, reason: "Allocated", message: "",
			},
			want: want{conds: []metav1.Condition{cond("VLANAllocated", metav1.ConditionTrue, 1, t1, "Allocated", "")}, changed: true},
		},
		"Unchanged": {
			reason: "Setting the same condition reports no change.",
			args: args{
				conds: []metav1.Condition{cond("VLANAllocated", metav1.ConditionTrue, 1, t0, "Allocated", "")},
				gen:   1, status: metav1.ConditionTrue, reason: "Allocated",
			},
			want: want{conds: []metav1.Condition{cond("VLANAllocated", metav1.ConditionTrue, 1, t0, "Allocated", "")}},
		},
		"OthersUntouched": {
			reason: "Other conditions are left alone.",
			args: args{
				conds: []metav1.Condition{cond("SubnetReady", metav1.ConditionTrue, 1, t0, "Ready", "")},
				gen:   1, status: metav1.ConditionUnknown, reason: "Pending",
			},
			want: want{conds: []metav1.Condition{
				cond("SubnetReady", metav1.ConditionTrue, 1, t0, "Ready", ""),
				cond("VLANAllocated", metav1.ConditionUnknown, 1, t1, "Pending", ""),
			}, changed: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := stateAt(tc.args.gen, t1.Time)
			conds := append([]metav1.Condition(nil), tc.args.conds...)
			changed := s.SetCondition(&conds, "VLANAllocated", tc.args.status, tc.args.reason, tc.args.message)
			if diff := cmp.Diff(tc.want.conds, conds); diff != "" {
				t.Errorf("%s\nSetCondition(...): -want, +got:\n%s", tc.reason, diff)
			}
			if changed != tc.want.changed {
				t.Errorf("%s\nSetCondition(...) changed = %v, want %v", tc.reason, changed, tc.want.changed)
			}
		})
	}
}

func TestSetReady(t *testing.T) {
	subs := []string{"VLANAllocated", "SubnetReady"}
	cases := map[string]struct {
		reason string
		conds  []metav1.Condition
		want   metav1.Condition
	}{
		"AllTrue": {
			reason: "Ready is True when every sub-condition is True.",
			conds: []metav1.Condition{
				cond("VLANAllocated", metav1.ConditionTrue, 2, t0, "Allocated", ""),
				cond("SubnetReady", metav1.ConditionTrue, 2, t0, "Ready", ""),
			},
			want: cond("Ready", metav1.ConditionTrue, 2, t1, engine.ReasonReady, ""),
		},
		"FirstFalse": {
			reason: "Ready copies the first sub-condition that is not True, in the given order.",
			conds: []metav1.Condition{
				cond("SubnetReady", metav1.ConditionUnknown, 2, t0, "SubnetDeleting", "going"),
				cond("VLANAllocated", metav1.ConditionFalse, 2, t0, "ZoneExhausted", "no free VLAN left in the zone"),
			},
			want: cond("Ready", metav1.ConditionFalse, 2, t1, "ZoneExhausted", "no free VLAN left in the zone"),
		},
		"Unknown": {
			reason: "An Unknown sub-condition makes Ready Unknown with its reason.",
			conds: []metav1.Condition{
				cond("VLANAllocated", metav1.ConditionTrue, 2, t0, "Allocated", ""),
				cond("SubnetReady", metav1.ConditionUnknown, 2, t0, "SubnetDeleting", "going"),
			},
			want: cond("Ready", metav1.ConditionUnknown, 2, t1, "SubnetDeleting", "going"),
		},
		"Missing": {
			reason: "A missing sub-condition counts as Unknown with reason Pending.",
			conds:  []metav1.Condition{cond("VLANAllocated", metav1.ConditionTrue, 2, t0, "Allocated", "")},
			want:   cond("Ready", metav1.ConditionUnknown, 2, t1, engine.ReasonPending, "condition SubnetReady has not been reported yet"),
		},
		"KeepsTime": {
			reason: "An existing Ready whose status holds keeps its lastTransitionTime.",
			conds: []metav1.Condition{
				cond("VLANAllocated", metav1.ConditionFalse, 2, t0, "ZoneNotFound", "gone"),
				cond("Ready", metav1.ConditionFalse, 1, t0, "ZoneExhausted", "full"),
			},
			want: cond("Ready", metav1.ConditionFalse, 2, t0, "ZoneNotFound", "gone"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := stateAt(2, t1.Time)
			conds := append([]metav1.Condition(nil), tc.conds...)
			s.SetReady(&conds, subs...)
			var got metav1.Condition
			for _, c := range conds {
				if c.Type == engine.ConditionReady {
					got = c
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nSetReady(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestSetConditionRealClock(t *testing.T) {
	var conds []metav1.Condition
	before := time.Now().Truncate(time.Second)
	if !engine.SetCondition(&conds, 4, "X", metav1.ConditionTrue, "Done", "") {
		t.Fatal("SetCondition on an empty list must report a change")
	}
	if !engine.SetReady(&conds, 4, "X") {
		t.Fatal("SetReady on a list without Ready must report a change")
	}
	for _, c := range conds {
		at := c.LastTransitionTime.Time
		if at.Before(before) || at.After(time.Now()) || at.Nanosecond() != 0 {
			t.Errorf("condition %s: lastTransitionTime %v is not now to the second", c.Type, at)
		}
		if c.ObservedGeneration != 4 || c.Status != metav1.ConditionTrue {
			t.Errorf("condition %s = %+v, want generation 4 and True", c.Type, c)
		}
	}
}
