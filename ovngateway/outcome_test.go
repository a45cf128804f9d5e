package ovngateway_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

var errBoom = fmt.Errorf("boom: %w", ovngateway.ErrNBUnavailable)

func TestRequeueAfter(t *testing.T) {
	cases := map[string]struct {
		outcome ovngateway.Outcome
		err     error
		want    time.Duration
	}{
		"Error":       {err: errBoom, want: 30 * time.Second},
		"PortMissing": {outcome: ovngateway.Outcome{Reason: ovngateway.ReasonRouterPortMissing}, want: 30 * time.Second},
		"Assigned":    {outcome: ovngateway.Outcome{Reason: ovngateway.ReasonChassisAssigned}, want: 5 * time.Minute},
		"NoTrunk":     {outcome: ovngateway.Outcome{Reason: ovngateway.ReasonNoTrunkNodes}, want: 5 * time.Minute},
		"Foreign":     {outcome: ovngateway.Outcome{Reason: ovngateway.ReasonForeignGroup}, want: 5 * time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ovngateway.RequeueAfter(tc.outcome, tc.err); got != tc.want {
				t.Errorf("RequeueAfter = %s, want %s", got, tc.want)
			}
		})
	}
}
