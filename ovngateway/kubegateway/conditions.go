package kubegateway

import (
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

// ConditionGatewayReady is the condition type this package decides.
const ConditionGatewayReady = "GatewayReady"

// Condition returns the GatewayReady condition after a pass that ended with
// o and err. ChassisAssigned is True, Disabled is Unknown, every other
// reason is False. After an error, ok is false while the NB grace has not
// expired: the object keeps the condition it carries, so a gateway that was
// up stays up through a short NB outage. Once expired, the condition is
// False with reason NBUnavailable. Set it with meta.SetStatusCondition, which
// keeps LastTransitionTime when only the message changes.
func Condition(o ovngateway.Outcome, err error, graceExpired bool) (c metav1.Condition, ok bool) {
	if err != nil {
		if !graceExpired {
			return metav1.Condition{}, false
		}
		return metav1.Condition{
			Type:    ConditionGatewayReady,
			Status:  metav1.ConditionFalse,
			Reason:  string(ovngateway.ReasonNBUnavailable),
			Message: fmt.Sprintf("the OVN northbound database has failed for more than %s: %v", ovngateway.NBGrace, err),
		}, true
	}
	status := metav1.ConditionFalse
	switch o.Reason {
	case ovngateway.ReasonChassisAssigned:
		status = metav1.ConditionTrue
	case ovngateway.ReasonDisabled:
		status = metav1.ConditionUnknown
	}
	return metav1.Condition{Type: ConditionGatewayReady, Status: status, Reason: string(o.Reason), Message: o.Message}, true
}

// Grace tracks, per network, since when its passes have failed, and says
// when the failures have lasted longer than the grace period. It is safe for
// concurrent use and keeps state in memory only: after a restart the grace
// starts again from the first failure seen.
type Grace struct {
	clock  clock.PassiveClock
	period time.Duration

	mu    sync.Mutex
	since map[string]time.Time
}

// NewGrace returns a tracker with the given clock (clock.RealClock{} in
// production) and period (ovngateway.NBGrace).
func NewGrace(c clock.PassiveClock, period time.Duration) *Grace {
	return &Grace{clock: c, period: period, since: map[string]time.Time{}}
}

// Observe records the result of a pass for key (the network's ID). A nil err
// ends a failure streak. It reports whether the current streak has lasted
// longer than the period.
func (g *Grace) Observe(key string, err error) (expired bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err == nil {
		delete(g.since, key)
		return false
	}
	now := g.clock.Now()
	first, ok := g.since[key]
	if !ok {
		g.since[key] = now
		first = now
	}
	return now.Sub(first) > g.period
}

// Forget drops key, for a network that is gone.
func (g *Grace) Forget(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.since, key)
}
