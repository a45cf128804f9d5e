package kube_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/kube"
)

// faultModel predicts what a client with Faults does, with rules that always
// fire (rate 0) until their Times run out.
type faultModel struct {
	rules    []*modelRule
	store    map[string]bool // names of ConfigMaps that exist
	injected int
}

type modelRule struct {
	verb  kube.Verb
	name  string // "" matches every object
	err   kube.ErrorKind
	after bool
	left  int // -1: no cap
}

var (
	faultNames = []string{"a", "b", "c"}
	faultVerbs = []kube.Verb{kube.VerbGet, kube.VerbCreate, kube.VerbPatch, kube.VerbDelete}
	faultKinds = []kube.ErrorKind{kube.Conflict, kube.Timeout, kube.NotFound, kube.Unavailable}
)

// predict returns the error kind the call gives and applies its effect.
func (m *faultModel) predict(verb kube.Verb, name string) string {
	real, apply := m.realOutcome(verb, name)
	for _, r := range m.rules {
		if r.verb != verb || (r.name != "" && r.name != name) || r.left == 0 {
			continue
		}
		if r.left > 0 {
			r.left--
		}
		m.injected++
		if r.after {
			apply()
			if real != "" {
				return real
			}
		}
		return string(r.err)
	}
	apply()
	return real
}

// realOutcome is what the fake store alone answers, and the effect of a success.
func (m *faultModel) realOutcome(verb kube.Verb, name string) (string, func()) {
	exists := m.store[name]
	switch verb {
	case kube.VerbCreate:
		if exists {
			return "AlreadyExists", func() {}
		}
		return "", func() { m.store[name] = true }
	case kube.VerbDelete:
		if !exists {
			return "NotFound", func() {}
		}
		return "", func() { delete(m.store, name) }
	default:
		if !exists {
			return "NotFound", func() {}
		}
		return "", func() {}
	}
}

func TestFaultsStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		f := kube.NewFaults(1)
		c := kube.NewClient(kube.ClientOptions{Faults: f})
		m := &faultModel{store: map[string]bool{}}
		t.Repeat(map[string]func(*rapid.T){
			"add": func(t *rapid.T) {
				r := &modelRule{
					verb:  rapid.SampledFrom(faultVerbs).Draw(t, "verb"),
					name:  rapid.SampledFrom(append([]string{""}, faultNames...)).Draw(t, "match"),
					err:   rapid.SampledFrom(faultKinds).Draw(t, "err"),
					after: rapid.Bool().Draw(t, "after"),
				}
				times := rapid.IntRange(0, 3).Draw(t, "times")
				r.left = times
				if times == 0 {
					r.left = -1
				}
				fault := kube.Fault{Verbs: []kube.Verb{r.verb}, Err: r.err, After: r.after, Times: times}
				if name := r.name; name != "" {
					fault.Match = func(c kube.Call) bool { return c.Key.Name == name }
				}
				if err := f.Add(fault); err != nil {
					t.Fatal(err)
				}
				m.rules = append(m.rules, r)
			},
			"clear": func(t *rapid.T) {
				f.Clear()
				m.rules = nil
			},
			"call": func(t *rapid.T) {
				verb := rapid.SampledFrom(faultVerbs).Draw(t, "verb")
				name := rapid.SampledFrom(faultNames).Draw(t, "name")
				want := m.predict(verb, name)
				var o op
				switch verb {
				case kube.VerbGet:
					o = get(name)
				case kube.VerbCreate:
					o = create(name)
				case kube.VerbPatch:
					o = patch(name, "x")
				default:
					o = del(name)
				}
				if got := kindOf(o(ctx, c)); got != want {
					t.Fatalf("%s %s: got error %q, want %q", verb, name, got, want)
				}
			},
			"": func(t *rapid.T) {
				if f.Injected() != m.injected {
					t.Fatalf("Injected() = %d, want %d", f.Injected(), m.injected)
				}
				l := &corev1.ConfigMapList{}
				if err := kube.Direct(c).List(ctx, l); err != nil {
					t.Fatal(err)
				}
				got := map[string]bool{}
				for _, o := range l.Items {
					got[o.Name] = true
				}
				if diff := cmp.Diff(m.store, got); diff != "" {
					t.Fatalf("store: -want, +got:\n%s", diff)
				}
			},
		})
	})
}
