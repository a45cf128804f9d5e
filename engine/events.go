package engine

import (
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

// RecorderFunc adapts a function to a Recorder, e.g. to forward to client-go's
// record.EventRecorder:
//
//	engine.RecorderFunc(func(o client.Object, t string, r engine.Reason, m string) { rec.Event(o, t, string(r), m) })
type RecorderFunc func(obj client.Object, eventType string, reason Reason, message string)

// Event calls f.
func (f RecorderFunc) Event(obj client.Object, eventType string, reason Reason, message string) {
	f(obj, eventType, reason, message)
}

// NopRecorder drops every event.
type NopRecorder struct{}

// Event does nothing.
func (NopRecorder) Event(client.Object, string, Reason, string) {}
