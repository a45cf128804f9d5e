package engine_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/pxsubstrate/pxsubstrate/engine"
)

// actions keeps what an events.k8s.io recorder is given.
type actions []string

func (a *actions) Eventf(_, _ runtime.Object, eventType, reason, action, note string, args ...any) {
	*a = append(*a, eventType+" "+reason+" "+action+" "+fmt.Sprintf(note, args...))
}

// TestEventsRecorder: each event reaches client-go's recorder with the
// action its reason is given, the engine's own reasons theirs, any other
// reason itself; a message is never read as a format.
func TestEventsRecorder(t *testing.T) {
	var got actions
	rec := engine.EventsRecorder{Recorder: &got, Actions: map[engine.Reason]string{"VLANAllocated": "Allocate"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	rec.Event(cm, corev1.EventTypeNormal, "VLANAllocated", "allocated VLAN 100 (100%)")
	rec.Event(cm, corev1.EventTypeNormal, engine.ReasonAddedFinalizer, "added finalizer f")
	rec.Event(cm, corev1.EventTypeWarning, "Odd", "odd")
	want := actions{"Normal VLANAllocated Allocate allocated VLAN 100 (100%)", "Normal AddedFinalizer AddFinalizer added finalizer f", "Warning Odd Odd odd"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}
