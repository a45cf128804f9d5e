package engine

import (
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reason is a CamelCase word for events, conditions and error metrics:
// "CannotXxx" for failures, past tense for successes ("AddedFinalizer").
type Reason string

// Reasons used by the engine itself.
const (
	ReasonAddedFinalizer        Reason = "AddedFinalizer"
	ReasonCannotAddFinalizer    Reason = "CannotAddFinalizer"
	ReasonRemovedFinalizer      Reason = "RemovedFinalizer"
	ReasonCannotRemoveFinalizer Reason = "CannotRemoveFinalizer"
	ReasonPanic                 Reason = "Panic"
	ReasonUnknown               Reason = "Unknown"
)

// Recorder receives events about objects. Event types are corev1.EventTypeNormal
// and corev1.EventTypeWarning.
type Recorder interface {
	Event(obj client.Object, eventType string, reason Reason, message string)
}

// RecorderFunc adapts a function to a Recorder (EventsRecorder forwards to
// client-go's events.k8s.io recorder).
type RecorderFunc func(obj client.Object, eventType string, reason Reason, message string)

// Event calls f.
func (f RecorderFunc) Event(obj client.Object, eventType string, reason Reason, message string) {
	f(obj, eventType, reason, message)
}

// NopRecorder drops every event.
type NopRecorder struct{}

// Event does nothing.
func (NopRecorder) Event(client.Object, string, Reason, string) {}

// EventActions are the events.k8s.io actions of the engine's own reasons:
// what it did, or failed to do.
var EventActions = map[Reason]string{
	ReasonAddedFinalizer:        "AddFinalizer",
	ReasonCannotAddFinalizer:    "AddFinalizer",
	ReasonRemovedFinalizer:      "RemoveFinalizer",
	ReasonCannotRemoveFinalizer: "RemoveFinalizer",
}

// EventsRecorder is the one adapter of a Recorder to client-go's
// events.k8s.io recorder (an events.EventBroadcaster's, or
// events.FakeRecorder in tests): a process builds it once and hands it to
// every runner (WithRecorder) and to every controller that records on
// objects other than the one reconciled. Each event carries the action
// Actions names for its reason (events.k8s.io's action: what the
// controller did or failed to do), else EventActions' for the engine's own
// reasons, else the reason itself; the message is never a format.
type EventsRecorder struct {
	Recorder events.EventRecorder
	Actions  map[Reason]string
}

var _ Recorder = EventsRecorder{}

// Event records the event through the events.k8s.io recorder.
func (r EventsRecorder) Event(obj client.Object, eventType string, reason Reason, message string) {
	action, ok := r.Actions[reason]
	if !ok {
		action, ok = EventActions[reason]
	}
	if !ok {
		action = string(reason)
	}
	r.Recorder.Eventf(obj, nil, eventType, string(reason), action, "%s", message)
}
