package sim

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Report is what a scenario run produced.
type Report struct {
	Name string `json:"name,omitempty"`
	// Steps says what each step did.
	Steps []StepReport `json:"steps"`
	// Failures lists the expectations that did not hold.
	Failures []string `json:"failures,omitempty"`
	// Objects are the final objects, sorted by kind, namespace and name.
	Objects []map[string]any `json:"objects"`
	// Summary counts the final networks by state and the VLANs by zone.
	Summary *Summary `json:"summary"`
}

// StepReport is one step's outcome.
type StepReport struct {
	Step       string `json:"step"`
	Time       string `json:"time"`
	Reconciles int    `json:"reconciles,omitempty"`
}

// RunFile runs the scenario file at path.
func RunFile(ctx context.Context, path string, data []byte) (*Report, error) {
	return RunFileWith(ctx, path, data, Options{})
}

// RunFileWith is RunFile with the harness options o (see RunWith).
func RunFileWith(ctx context.Context, path string, data []byte, o Options) (*Report, error) {
	s, err := ParseScenario(data)
	if err != nil {
		return nil, err
	}
	return RunWith(ctx, s, filepath.Dir(path), o)
}

// Run runs a parsed scenario; dir resolves apply files. A step that cannot
// run (a bad object, a missing one to delete, no convergence) is an error;
// expectations that do not hold are Failures in the report.
func Run(ctx context.Context, s *Scenario, dir string) (*Report, error) {
	return RunOn(ctx, s, dir, nil)
}

// RunOn is Run on store, the API a Harness runs on (nil: a new in-memory
// one), for example a client of a real API server.
func RunOn(ctx context.Context, s *Scenario, dir string, store client.WithWatch) (*Report, error) {
	return RunWith(ctx, s, dir, Options{Store: store})
}

// RunWith is Run with the harness options o (Store, Progress...); the
// scenario sets the prune timeout and Kube-OVN's pruning.
func RunWith(ctx context.Context, s *Scenario, dir string, o Options) (*Report, error) {
	start := time.Now()
	timeout, err := s.pruneTimeout()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidScenario, err)
	}
	o.SubnetPruneTimeout, o.KubeOVNDoesNotPrune = timeout, s.KubeOVNDoesNotPrune
	h := NewHarness(o)
	if err := h.Start(ctx); err != nil {
		return nil, err
	}
	rep := &Report{Name: s.Name, Steps: []StepReport{}}
	for i, st := range s.Steps {
		n, fails, err := h.runStep(ctx, st, dir)
		if err != nil {
			return rep, fmt.Errorf("step %d (%s): %w", i+1, st.label(), err)
		}
		for _, f := range fails {
			rep.Failures = append(rep.Failures, fmt.Sprintf("step %d (%s): %s", i+1, st.label(), f))
		}
		rep.Steps = append(rep.Steps, StepReport{Step: st.label(), Time: h.Clock.Now().UTC().Format(time.RFC3339), Reconciles: n})
	}
	if rep.Objects, err = h.Objects(ctx); err != nil {
		return rep, err
	}
	if rep.Summary, err = h.summarize(ctx); err != nil {
		return rep, err
	}
	for _, st := range rep.Steps {
		rep.Summary.Reconciles += st.Reconciles
	}
	rep.Summary.Seconds = time.Since(start).Seconds()
	return rep, nil
}

func (h *Harness) runStep(ctx context.Context, st Step, dir string) (int, []string, error) {
	switch {
	case st.Apply != nil:
		objs, err := readObjects(st.Apply, dir, h.opts.MaxFileBytes)
		if err != nil {
			return 0, nil, err
		}
		return 0, nil, h.ApplyAll(ctx, objs)
	case st.Delete != nil:
		for _, r := range st.Delete {
			if err := h.Delete(ctx, r); err != nil {
				return 0, nil, err
			}
		}
		return 0, nil, nil
	case st.Restart:
		return 0, nil, h.Restart(ctx)
	case st.Advance != "":
		d, _ := time.ParseDuration(st.Advance)
		n, err := h.Advance(ctx, d)
		return n, nil, err
	case st.Converge:
		n, err := h.Converge(ctx)
		return n, nil, err
	default:
		var fails []string
		for _, e := range st.Expect {
			fails = append(fails, h.check(ctx, e)...)
		}
		return 0, fails, nil
	}
}

// ApplyAll creates each object, or updates it when it exists; a status in
// the document is written too, as the object's controller would.
func (h *Harness) ApplyAll(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, u := range objs {
		if err := h.apply(ctx, u); err != nil {
			return err
		}
	}
	return nil
}

func (h *Harness) apply(ctx context.Context, u *unstructured.Unstructured) error {
	status, hasStatus := u.Object["status"]
	obj := u.DeepCopy()
	err := h.client.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(u.GroupVersionKind())
		if err := h.client.Get(ctx, client.ObjectKeyFromObject(u), cur); err != nil {
			return fmt.Errorf("cannot read %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		obj = u.DeepCopy()
		obj.SetResourceVersion(cur.GetResourceVersion())
		obj.SetFinalizers(cur.GetFinalizers())
		err = h.client.Update(ctx, obj)
	}
	if err != nil {
		return fmt.Errorf("cannot apply %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	if !hasStatus {
		return nil
	}
	obj.Object["status"] = status
	if err := h.client.Status().Update(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cannot write the status of %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// Delete deletes the object r names. It passes the whole object to the
// delete, so the controller's cache learns what went (the pool an address
// was allocated from, the pools a machine used).
func (h *Harness) Delete(ctx context.Context, r ObjectRef) error {
	u, err := h.get(ctx, r)
	if err != nil {
		return fmt.Errorf("cannot delete %s: %w", r, err)
	}
	if err := h.client.Delete(ctx, u); err != nil {
		return fmt.Errorf("cannot delete %s: %w", r, err)
	}
	return nil
}

func (h *Harness) get(ctx context.Context, r ObjectRef) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.FromAPIVersionAndKind(r.APIVersion, r.Kind))
	err := h.store.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, u)
	return u, err
}

func (h *Harness) check(ctx context.Context, e Expectation) []string {
	u, err := h.get(ctx, e.ObjectRef)
	switch {
	case apierrors.IsNotFound(err) && e.Absent:
		return nil
	case apierrors.IsNotFound(err):
		return []string{fmt.Sprintf("%s does not exist", e.ObjectRef)}
	case err != nil:
		return []string{fmt.Sprintf("cannot read %s: %v", e.ObjectRef, err)}
	case e.Absent:
		return []string{fmt.Sprintf("%s still exists", e.ObjectRef)}
	}
	var fails []string
	for _, typ := range sortedKeys(e.Messages) {
		if got := conditionMessage(u, typ); !strings.Contains(got, e.Messages[typ]) {
			fails = append(fails, fmt.Sprintf("%s: condition %s has message %q, which does not contain %q", e.ObjectRef, typ, got, e.Messages[typ]))
		}
	}
	for _, typ := range sortedKeys(e.Conditions) {
		want := e.Conditions[typ]
		if got := conditionOf(u, typ, strings.Contains(want, "/")); got != want {
			fails = append(fails, fmt.Sprintf("%s: condition %s is %q, want %q", e.ObjectRef, typ, got, want))
		}
	}
	for _, path := range sortedKeys(e.Fields) {
		want := e.Fields[path]
		got, err := FieldString(u.Object, path)
		if err != nil {
			fails = append(fails, fmt.Sprintf("%s: %v", e.ObjectRef, err))
		} else if got != want {
			fails = append(fails, fmt.Sprintf("%s: %s is %q, want %q", e.ObjectRef, path, got, want))
		}
	}
	return fails
}

func conditionMessage(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			return fmt.Sprint(m["message"])
		}
	}
	return ""
}

func conditionOf(u *unstructured.Unstructured, typ string, withReason bool) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != typ {
			continue
		}
		s := fmt.Sprint(m["status"])
		if withReason {
			s += "/" + fmt.Sprint(m["reason"])
		}
		return s
	}
	return "(absent)"
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
