package engine

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition type and reasons set by SetReady.
const (
	// ConditionReady is the summary condition SetReady maintains.
	ConditionReady = "Ready"
	// ReasonReady is Ready's reason when every sub-condition is True.
	ReasonReady = "Ready"
	// ReasonPending is Ready's reason when a sub-condition has not been set yet.
	ReasonPending = "Pending"
)

// SetCondition sets the condition typ in conds with meta.SetStatusCondition:
// it stamps observedGeneration with generation, and keeps lastTransitionTime
// when the status does not change (otherwise it becomes now, to the second).
// It reports whether conds changed.
func SetCondition(conds *[]metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, reason, message string) bool {
	return setCondition(conds, time.Now(), generation, typ, status, reason, message)
}

// SetReady derives the Ready condition from the named sub-conditions: True
// (reason Ready) when all of them are True; otherwise the status, reason and
// message of the first one, in the given order, that is not True. A missing
// sub-condition counts as Unknown with reason Pending. subTypes must not name
// Ready itself. It reports whether conds changed.
func SetReady(conds *[]metav1.Condition, generation int64, subTypes ...string) bool {
	return setReady(conds, time.Now(), generation, subTypes)
}

func setCondition(conds *[]metav1.Condition, now time.Time, generation int64, typ string, status metav1.ConditionStatus, reason, message string) bool {
	return meta.SetStatusCondition(conds, metav1.Condition{
		Type:               typ,
		Status:             status,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now).Rfc3339Copy(),
		Reason:             reason,
		Message:            message,
	})
}

func setReady(conds *[]metav1.Condition, now time.Time, generation int64, subTypes []string) bool {
	return summarize(conds, now, generation, summary{subTypes: subTypes})
}

// summary is how Ready is derived from sub-conditions: SetReady's rules
// with SummarizeReady's adjustments.
type summary struct {
	subTypes []string
	skip     func(metav1.Condition) bool
	notReady metav1.ConditionStatus
	message  string
}

func summarize(conds *[]metav1.Condition, now time.Time, generation int64, sum summary) bool {
	status, reason, message := metav1.ConditionTrue, ReasonReady, sum.message
	for _, typ := range sum.subTypes {
		c := meta.FindStatusCondition(*conds, typ)
		if c == nil {
			status, reason, message = metav1.ConditionUnknown, ReasonPending, "condition "+typ+" has not been reported yet"
			break
		}
		if c.Status == metav1.ConditionTrue || (sum.skip != nil && sum.skip(*c)) {
			continue
		}
		status, reason, message = c.Status, c.Reason, c.Message
		if sum.notReady != "" {
			status = sum.notReady
		}
		break
	}
	return setCondition(conds, now, generation, ConditionReady, status, reason, message)
}
