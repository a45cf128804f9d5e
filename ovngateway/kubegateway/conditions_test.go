package kubegateway_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
)

var errBoom = fmt.Errorf("boom: %w", ovngateway.ErrNBUnavailable)

func TestCondition(t *testing.T) {
	type want struct {
		cond metav1.Condition
		ok   bool
	}
	cases := map[string]struct {
		reason  string
		outcome ovngateway.Outcome
		err     error
		expired bool
		want    want
	}{
		"Assigned": {
			reason:  "ChassisAssigned is True",
			outcome: ovngateway.Outcome{Reason: ovngateway.ReasonChassisAssigned, Message: "m"},
			want:    want{metav1.Condition{Type: "GatewayReady", Status: metav1.ConditionTrue, Reason: "ChassisAssigned", Message: "m"}, true},
		},
		"Disabled": {
			reason:  "Disabled is Unknown, which Ready ignores",
			outcome: ovngateway.Disabled(),
			want: want{metav1.Condition{Type: "GatewayReady", Status: metav1.ConditionUnknown, Reason: "Disabled",
				Message: "OVN gateway management is disabled; the router port is left as Kube-OVN made it"}, true},
		},
		"Foreign": {
			reason:  "ForeignGroup is False with the outcome's message",
			outcome: ovngateway.Outcome{Reason: ovngateway.ReasonForeignGroup, Message: `OVN HA_Chassis_Group "g" belongs to "x"`},
			want:    want{metav1.Condition{Type: "GatewayReady", Status: metav1.ConditionFalse, Reason: "ForeignGroup", Message: `OVN HA_Chassis_Group "g" belongs to "x"`}, true},
		},
		"WaitingForVLAN": {
			reason:  "WaitingForVLAN is False",
			outcome: ovngateway.WaitingForVLAN(),
			want:    want{metav1.Condition{Type: "GatewayReady", Status: metav1.ConditionFalse, Reason: "WaitingForVLAN", Message: "waiting for a VLAN to be allocated before managing the gateway"}, true},
		},
		"SubnetUnavailable": {
			reason:  "SubnetUnavailable is False and names the subnet",
			outcome: ovngateway.SubnetUnavailable("sub1", "it does not exist"),
			want:    want{metav1.Condition{Type: "GatewayReady", Status: metav1.ConditionFalse, Reason: "SubnetUnavailable", Message: `Kube-OVN Subnet "sub1" is not available: it does not exist`}, true},
		},
		"ErrorInGrace": {
			reason: "an NB error within the grace keeps whatever condition the object has",
			err:    errBoom,
			want:   want{ok: false},
		},
		"ErrorPastGrace": {
			reason:  "an NB error past the grace is NBUnavailable",
			err:     errBoom,
			expired: true,
			want: want{metav1.Condition{Type: "GatewayReady", Status: metav1.ConditionFalse, Reason: "NBUnavailable",
				Message: "the OVN northbound database has failed for more than 10m0s: boom: OVN northbound database unavailable"}, true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, ok := kubegateway.Condition(tc.outcome, tc.err, tc.expired)
			if diff := cmp.Diff(tc.want, want{c, ok}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nCondition: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGrace(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	g := kubegateway.NewGrace(clk, ovngateway.NBGrace)
	steps := []struct {
		advance time.Duration
		key     string
		err     error
		want    bool
	}{
		{0, "a/n", errBoom, false},
		{5 * time.Minute, "a/n", errBoom, false},
		{5 * time.Minute, "a/n", errBoom, false}, // exactly 10 minutes: not past yet
		{0, "b/n", errBoom, false},               // another network has its own streak
		{time.Second, "a/n", errBoom, true},
		{0, "b/n", errBoom, false},
		{0, "a/n", nil, false}, // success ends the streak
		{time.Hour, "a/n", errBoom, false},
		{0, "b/n", errBoom, true},
	}
	for i, s := range steps {
		clk.SetTime(clk.Now().Add(s.advance))
		if got := g.Observe(s.key, s.err); got != s.want {
			t.Errorf("step %d (%s, err=%v): expired=%v, want %v", i, s.key, s.err, got, s.want)
		}
	}
	g.Forget("b/n")
	if g.Observe("b/n", errors.New("x")) {
		t.Error("a forgotten network starts a new streak")
	}
}
