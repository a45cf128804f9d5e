package kube_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
)

const ns = "default"

func cm(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": "v"}}
}

// kindOf names an API error for comparison; "" is success.
func kindOf(err error) string {
	switch {
	case err == nil:
		return ""
	case apierrors.IsConflict(err):
		return "Conflict"
	case apierrors.IsTimeout(err):
		return "Timeout"
	case apierrors.IsNotFound(err):
		return "NotFound"
	case apierrors.IsServiceUnavailable(err):
		return "ServiceUnavailable"
	case apierrors.IsAlreadyExists(err):
		return "AlreadyExists"
	default:
		return "other: " + err.Error()
	}
}

// op is one call against the client; it returns the call's error.
type op func(ctx context.Context, c client.Client) error

func get(name string) op {
	return func(ctx context.Context, c client.Client) error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
	}
}

func create(name string) op {
	return func(ctx context.Context, c client.Client) error { return c.Create(ctx, cm(name)) }
}

func patch(name, value string) op {
	return func(ctx context.Context, c client.Client) error {
		o := cm(name)
		return c.Patch(ctx, o, client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"data":{"k":%q}}`, value)))
	}
}

func list() op {
	return func(ctx context.Context, c client.Client) error { return c.List(ctx, &corev1.ConfigMapList{}) }
}

func del(name string) op {
	return func(ctx context.Context, c client.Client) error { return c.Delete(ctx, cm(name)) }
}

func TestFaults(t *testing.T) {
	type want struct {
		errs     []string          // error kind per op
		store    map[string]string // name -> data.k afterwards
		injected int
	}
	cases := map[string]struct {
		reason string
		faults []kube.Fault
		ops    []op
		want   want
	}{
		"None": {
			reason: "Without rules every call succeeds.",
			ops:    []op{get("a"), patch("a", "x"), create("b")},
			want:   want{errs: []string{"", "", ""}, store: map[string]string{"a": "x", "b": "v"}},
		},
		"ConflictOnPatch": {
			reason: "A conflict on patch leaves the store unchanged.",
			faults: []kube.Fault{{Verbs: []kube.Verb{kube.VerbPatch}, Err: kube.Conflict}},
			ops:    []op{patch("a", "x"), get("a")},
			want:   want{errs: []string{"Conflict", ""}, store: map[string]string{"a": "v"}, injected: 1},
		},
		"TimeoutAfterCreate": {
			reason: "After lets the create reach the store before the timeout is returned.",
			faults: []kube.Fault{{Verbs: []kube.Verb{kube.VerbCreate}, Err: kube.Timeout, After: true}},
			ops:    []op{create("b")},
			want:   want{errs: []string{"Timeout"}, store: map[string]string{"a": "v", "b": "v"}, injected: 1},
		},
		"AfterKeepsRealError": {
			reason: "When the call itself fails, its own error wins over the injected one.",
			faults: []kube.Fault{{Verbs: []kube.Verb{kube.VerbCreate}, Err: kube.Timeout, After: true}},
			ops:    []op{create("a")},
			want:   want{errs: []string{"AlreadyExists"}, store: map[string]string{"a": "v"}, injected: 1},
		},
		"NotFoundOnGet": {
			reason: "A NotFound fault hides an existing object.",
			faults: []kube.Fault{{Verbs: []kube.Verb{kube.VerbGet}, Err: kube.NotFound}},
			ops:    []op{get("a")},
			want:   want{errs: []string{"NotFound"}, store: map[string]string{"a": "v"}, injected: 1},
		},
		"Times": {
			reason: "Times caps how often a fault fires.",
			faults: []kube.Fault{{Verbs: []kube.Verb{kube.VerbPatch}, Err: kube.Unavailable, Times: 2}},
			ops:    []op{patch("a", "1"), patch("a", "2"), patch("a", "3")},
			want:   want{errs: []string{"ServiceUnavailable", "ServiceUnavailable", ""}, store: map[string]string{"a": "3"}, injected: 2},
		},
		"Match": {
			reason: "Match narrows a fault to chosen objects.",
			faults: []kube.Fault{{Err: kube.Conflict, Match: func(c kube.Call) bool { return c.Key.Name == "b" }}},
			ops:    []op{create("b"), patch("a", "x"), create("c")},
			want:   want{errs: []string{"Conflict", "", ""}, store: map[string]string{"a": "x", "c": "v"}, injected: 1},
		},
		"ListKind": {
			reason: "List calls carry the kind of the items.",
			faults: []kube.Fault{{Verbs: []kube.Verb{kube.VerbList}, Err: kube.Unavailable, Match: func(c kube.Call) bool { return c.GVK.Kind == "ConfigMap" }}},
			ops:    []op{list()},
			want:   want{errs: []string{"ServiceUnavailable"}, store: map[string]string{"a": "v"}, injected: 1},
		},
		"FirstRuleWins": {
			reason: "The first matching rule decides.",
			faults: []kube.Fault{
				{Verbs: []kube.Verb{kube.VerbDelete}, Err: kube.Timeout, Times: 1},
				{Verbs: []kube.Verb{kube.VerbDelete}, Err: kube.Conflict, Times: 1},
			},
			ops:  []op{del("a"), del("a"), del("a")},
			want: want{errs: []string{"Timeout", "Conflict", ""}, store: map[string]string{}, injected: 2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := kube.NewFaults(1)
			if err := f.Set(tc.faults...); err != nil {
				t.Fatal(err)
			}
			c := kube.NewClient(kube.ClientOptions{Objects: []client.Object{cm("a")}, Faults: f})
			var got want
			for _, o := range tc.ops {
				got.errs = append(got.errs, kindOf(o(ctx, c)))
			}
			got.store = map[string]string{}
			l := &corev1.ConfigMapList{}
			if err := kube.Direct(c).List(ctx, l); err != nil {
				t.Fatal(err)
			}
			for _, o := range l.Items {
				got.store[o.Name] = o.Data["k"]
			}
			got.injected = f.Injected()
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestFaultsInvalid(t *testing.T) {
	cases := map[string]struct {
		reason string
		fault  kube.Fault
	}{
		"RateAbove1":  {reason: "A rate above 1 is refused.", fault: kube.Fault{Err: kube.Conflict, Rate: 1.5}},
		"RateBelow0":  {reason: "A negative rate is refused.", fault: kube.Fault{Err: kube.Conflict, Rate: -0.1}},
		"TimesNeg":    {reason: "Negative times are refused.", fault: kube.Fault{Err: kube.Conflict, Times: -1}},
		"UnknownKind": {reason: "An unknown error kind is refused.", fault: kube.Fault{Err: "Teapot"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := kube.NewFaults(1)
			if err := f.Set(kube.Fault{Err: kube.Conflict}, tc.fault); !errors.Is(err, kube.ErrInvalidFault) {
				t.Errorf("%s\nSet() = %v, want ErrInvalidFault", tc.reason, err)
			}
			c := kube.NewClient(kube.ClientOptions{Objects: []client.Object{cm("a")}, Faults: f})
			if err := get("a")(context.Background(), c); err != nil {
				t.Errorf("%s\na refused Set must leave no rule behind, got %v", tc.reason, err)
			}
		})
	}
}

// TestFaultsRate checks that a rate fails about that share of calls and that
// the same seed fails the same calls.
func TestFaultsRate(t *testing.T) {
	run := func(seed uint64) []bool {
		f := kube.NewFaults(seed)
		if err := f.Add(kube.Fault{Verbs: []kube.Verb{kube.VerbGet}, Err: kube.Unavailable, Rate: 0.3}); err != nil {
			t.Fatal(err)
		}
		c := kube.NewClient(kube.ClientOptions{Objects: []client.Object{cm("a")}, Faults: f})
		var failed []bool
		for range 2000 {
			failed = append(failed, get("a")(context.Background(), c) != nil)
		}
		if n := f.Injected(); n < 500 || n > 700 {
			t.Errorf("rate 0.3 failed %d of 2000 calls, want about 600", n)
		}
		return failed
	}
	if diff := cmp.Diff(run(42), run(42)); diff != "" {
		t.Errorf("the same seed failed different calls:\n%s", diff)
	}
	if cmp.Equal(run(42), run(43)) {
		t.Error("different seeds failed exactly the same calls")
	}
}

func TestClientStatusAndHooks(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
	var seen []string
	f := kube.NewFaults(1)
	if err := f.Add(kube.Fault{Verbs: []kube.Verb{kube.VerbGet}, Err: kube.Unavailable}); err != nil {
		t.Fatal(err)
	}
	c := kube.NewClient(kube.ClientOptions{
		Objects:    []client.Object{pod},
		WithStatus: []client.Object{&corev1.Pod{}},
		Faults:     f,
		Hooks: interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			seen = append(seen, key.Name)
			return c.Get(ctx, key, obj, opts...)
		}},
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("Get through the faults = %v, want ServiceUnavailable", err)
	}
	if diff := cmp.Diff([]string{"p"}, seen); diff != "" {
		t.Errorf("hooks must see calls that faults then fail: -want, +got:\n%s", diff)
	}
	direct := kube.Direct(c)
	stored := &corev1.Pod{}
	if err := direct.Get(ctx, client.ObjectKeyFromObject(pod), stored); err != nil {
		t.Fatalf("Direct must bypass faults: %v", err)
	}
	stored.Status.Phase = corev1.PodRunning
	stored.Labels = map[string]string{"a": "b"}
	if err := direct.Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	after := &corev1.Pod{}
	_ = direct.Get(ctx, client.ObjectKeyFromObject(pod), after)
	if after.Status.Phase != "" || after.Labels["a"] != "b" {
		t.Errorf("Update changed phase to %q and labels to %v; with a status subresource only metadata/spec change", after.Status.Phase, after.Labels)
	}
	after.Status.Phase = corev1.PodRunning
	after.Labels = nil
	if err := direct.Status().Update(ctx, after); err != nil {
		t.Fatal(err)
	}
	final := &corev1.Pod{}
	_ = direct.Get(ctx, client.ObjectKeyFromObject(pod), final)
	if final.Status.Phase != corev1.PodRunning || final.Labels["a"] != "b" {
		t.Errorf("Status().Update gave phase %q and labels %v; it must change status only", final.Status.Phase, final.Labels)
	}
}
