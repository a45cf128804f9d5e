package demo

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// shownEvent is one Event the controller emitted, as kubectl lists it.
type shownEvent struct {
	namespace, name         string
	eventType, reason, note string
}

// eventLog keeps the Events the controller emits, in order, for the acts
// to print what `kubectl get events` would show.
type eventLog struct {
	mu    sync.Mutex
	items []shownEvent
}

var _ events.EventRecorder = (*eventLog)(nil)

// Eventf records an Event regarding an object.
func (l *eventLog) Eventf(regarding runtime.Object, _ runtime.Object, eventType, reason, _ string, note string, args ...any) {
	e := shownEvent{eventType: eventType, reason: reason, note: fmt.Sprintf(note, args...)}
	if m, err := meta.Accessor(regarding); err == nil {
		e.namespace, e.name = m.GetNamespace(), m.GetName()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, e)
}

// of returns the Events regarding namespace/name, oldest first.
func (l *eventLog) of(namespace, name string) []shownEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []shownEvent
	for _, e := range l.items {
		if e.namespace == namespace && e.name == name {
			out = append(out, e)
		}
	}
	return out
}

// Events prints the Events regarding each network, as
// `kubectl get events --field-selector regarding.name=NAME` lists them.
func (s *Stage) Events(networks ...[2]string) {
	s.Table([]string{"NETWORK", "TYPE", "REASON", "MESSAGE"}, func(row func(...any)) {
		for _, n := range networks {
			for _, e := range s.events.of(n[0], n[1]) {
				row(n[0]+"/"+n[1], e.eventType, e.reason, e.note)
			}
		}
	})
}
