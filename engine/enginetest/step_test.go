package enginetest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/engine/enginetest"
)

// copyStep copies a ConfigMap's data into a Secret of its name, marks the
// ConfigMap copied, and says so; a ConfigMap marked copied is done.
type copyStep struct{ c client.Client }

func (s copyStep) Reconcile(ctx context.Context, st *engine.State[*corev1.ConfigMap]) (engine.Result, error) {
	cm := st.Object
	if cm.Annotations["copied"] == "true" {
		return engine.Result{}, nil
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: cm.Name}, StringData: cm.Data}
	if err := s.c.Create(ctx, sec); err != nil && !apierrors.IsAlreadyExists(err) {
		return engine.Result{}, err
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Annotations = map[string]string{"copied": "true"}
	if err := s.c.Patch(ctx, cm, patch); err != nil {
		return engine.Result{}, err
	}
	st.Event(corev1.EventTypeNormal, "Copied", "copied to Secret "+sec.Name+" at "+st.Clock.Now().UTC().Format(time.RFC3339))
	return engine.Result{RequeueAfter: time.Minute}, nil
}

// TestStepTest runs a table of copyStep: a copy, a ConfigMap already
// copied, and an API that refuses the Secret.
func TestStepTest(t *testing.T) {
	cm := func(copied bool) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"k": "v"}}
		if copied {
			c.Annotations = map[string]string{"copied": "true"}
		}
		return c
	}
	key := client.ObjectKey{Namespace: "ns", Name: "cm"}
	enginetest.StepTest[*corev1.ConfigMap]{
		Scheme: clientgoscheme.Scheme,
		New:    func(_ *testing.T, r enginetest.Rig) engine.Step[*corev1.ConfigMap] { return copyStep{r.Client} },
		Cases: map[string]enginetest.StepCase[*corev1.ConfigMap]{
			"Copies": {Given: []client.Object{cm(false)}, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}},
				Now:          time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
				ExpectWrites: []enginetest.Write{{Verb: "create", Kind: "Secret", Key: key}, {Verb: "patch", Kind: "ConfigMap", Key: key}},
				ExpectEvents: []enginetest.Event{{Object: key, Type: corev1.EventTypeNormal, Reason: "Copied", Message: "copied to Secret cm at 2100-01-01T00:00:00Z"}},
				ExpectResult: engine.Result{RequeueAfter: time.Minute},
				Verify: func(t *testing.T, c client.Client) {
					sec := &corev1.Secret{}
					if err := c.Get(context.Background(), key, sec); err != nil {
						t.Errorf("no Secret: %v", err)
					}
				}},
			"AlreadyCopied": {Given: []client.Object{cm(true)}, Object: cm(true)},
			"Refused": {Given: []client.Object{cm(false)}, Object: cm(false), ExpectErr: "quota exceeded",
				Hooks: &interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
					return errors.New("quota exceeded")
				}}},
		},
	}.Run(t)
}
