package enginetest

import (
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/engine"
)

// Event is one recorded event.
type Event struct {
	Object  client.ObjectKey
	Type    string
	Reason  engine.Reason
	Message string
}

// Recorder keeps every event in memory. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

var _ engine.Recorder = (*Recorder)(nil)

// Event records an event.
func (r *Recorder) Event(obj client.Object, eventType string, reason engine.Reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, Event{Object: client.ObjectKeyFromObject(obj), Type: eventType, Reason: reason, Message: message})
}

// Events returns a copy of the events recorded so far, oldest first.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Reasons returns the reasons of the events recorded so far, oldest first.
func (r *Recorder) Reasons() []engine.Reason {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]engine.Reason, 0, len(r.events))
	for _, e := range r.events {
		out = append(out, e.Reason)
	}
	return out
}
