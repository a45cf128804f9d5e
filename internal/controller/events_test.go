package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/internal/controller"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
)

// apiEvent is what an operator reads of an events.k8s.io Event.
type apiEvent struct {
	Regarding           string
	Type, Reason, Note  string
	Action, Reporter    string
	InstanceFromProcess bool
}

// waitForEvents waits until the API server holds an events.k8s.io Event
// regarding the ProxmoxNetwork name for each of want (compared by reason),
// selected by the field selector the troubleshooting guide gives, and
// compares them with want.
func waitForEvents(t *testing.T, cs kubernetes.Interface, name string, want ...apiEvent) {
	t.Helper()
	ctx := context.Background()
	var got []apiEvent
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := cs.EventsV1().Events(controllertest.Tenant).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + name})
		if err != nil {
			t.Fatalf("cannot list the events of ProxmoxNetwork %s: %v", name, err)
		}
		got = byReason(list.Items, want)
		if len(got) == len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events.k8s.io Events regarding ProxmoxNetwork %s: -want +got:\n%s", name, diff)
	}
	core, err := cs.CoreV1().Events(controllertest.Tenant).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=ProxmoxNetwork,involvedObject.name=" + name,
	})
	if err != nil {
		t.Fatalf("cannot list the core events of ProxmoxNetwork %s: %v", name, err)
	}
	var wantReasons, coreReasons []string
	for _, w := range want {
		wantReasons = append(wantReasons, w.Reason)
		for _, e := range core.Items {
			if e.Reason == w.Reason {
				coreReasons = append(coreReasons, e.Reason)
				break
			}
		}
	}
	if diff := cmp.Diff(wantReasons, coreReasons); diff != "" {
		t.Errorf("the same Events through the core API (kubectl describe): reasons -want +got:\n%s", diff)
	}
}

// byReason returns, in the order of want, the first Event of each wanted
// reason.
func byReason(items []eventsv1.Event, want []apiEvent) []apiEvent {
	var out []apiEvent
	for _, w := range want {
		for _, e := range items {
			if e.Reason != w.Reason {
				continue
			}
			r := e.Regarding
			out = append(out, apiEvent{
				Regarding: fmt.Sprintf("%s %s %s/%s", r.APIVersion, r.Kind, r.Namespace, r.Name),
				Type:      e.Type, Reason: e.Reason, Note: e.Note, Action: e.Action, Reporter: e.ReportingController,
				InstanceFromProcess: strings.HasPrefix(e.ReportingInstance, controller.ReportingController+"-"),
			})
			break
		}
	}
	return out
}

// networkEvent is the Event the controller process emits on the test's
// ProxmoxNetwork name.
func networkEvent(name, typ string, reason engine.Reason, action, note string) apiEvent {
	return apiEvent{
		Regarding: "proxmox.cozystack.io/v1alpha1 ProxmoxNetwork " + controllertest.Tenant + "/" + name,
		Type:      typ, Reason: string(reason), Note: note, Action: action,
		Reporter: controller.ReportingController, InstanceFromProcess: true,
	}
}
