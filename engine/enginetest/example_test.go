package enginetest_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/enginetest"
)

func ExampleRecorder() {
	rec := &enginetest.Recorder{}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	s := engine.NewState(cm, nil)
	s.Recorder = rec
	s.Event(corev1.EventTypeNormal, "AllocatedVLAN", "vlan 100")
	for _, e := range rec.Events() {
		fmt.Println(e.Object, e.Type, e.Reason, e.Message)
	}
	// Output: ns/cm Normal AllocatedVLAN vlan 100
}
