package sim

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-multierror"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capread"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// ErrInvalidScenario says a scenario file cannot be run as written.
var ErrInvalidScenario = errors.New("invalid scenario")

// Scenario is a simulation script: settings and a list of steps.
type Scenario struct {
	// Name is printed in reports.
	Name string `json:"name,omitempty"`
	// SubnetPruneTimeout is the controller's --subnet-prune-timeout ("10m").
	SubnetPruneTimeout string `json:"subnetPruneTimeout,omitempty"`
	// KubeOVNDoesNotPrune keeps deleted subnets listed on their Vlan.
	KubeOVNDoesNotPrune bool `json:"kubeOVNDoesNotPrune,omitempty"`
	// Steps run in order. The controller starts before the first step.
	Steps []Step `json:"steps"`
}

// Step does exactly one thing.
type Step struct {
	// Name labels the step in reports and failures.
	Name string `json:"name,omitempty"`
	// Apply creates the objects, or updates them when they exist.
	Apply *Apply `json:"apply,omitempty"`
	// Delete deletes the objects named (finalizers are honoured).
	Delete []ObjectRef `json:"delete,omitempty"`
	// Restart drops the controller and all its memory and starts a new one.
	Restart bool `json:"restart,omitempty"`
	// Advance moves the clock forward ("30s", "10m"), reconciling at every
	// moment something is due.
	Advance string `json:"advance,omitempty"`
	// Converge runs the world and the controller until nothing is left to
	// do at the current time.
	Converge bool `json:"converge,omitempty"`
	// Expect checks the objects as they are now.
	Expect []Expectation `json:"expect,omitempty"`
}

// Apply holds objects as YAML documents, inline or in a file.
type Apply struct {
	// Objects is one or more YAML documents separated by "---".
	Objects string `json:"objects,omitempty"`
	// File is a YAML file of documents, relative to the scenario file.
	File string `json:"file,omitempty"`
}

// ObjectRef names one object.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// Expectation is an assertion on one object.
type Expectation struct {
	ObjectRef `json:",inline"`
	// Absent expects the object not to exist.
	Absent bool `json:"absent,omitempty"`
	// Conditions maps a condition type to "Status" or "Status/Reason",
	// e.g. Ready: False/InUse.
	Conditions map[string]string `json:"conditions,omitempty"`
	// Messages maps a condition type to a text its message must contain.
	Messages map[string]string `json:"messages,omitempty"`
	// Fields maps a dotted path to the value expected there, printed as
	// YAML scalars are: status.vlan: "100", metadata.annotations.x: "...".
	// An empty value expects the field to be absent.
	Fields map[string]string `json:"fields,omitempty"`
}

// ParseScenario reads a scenario and checks every step. A scenario with
// several mistakes gets them all, one line each; errors.Is(err,
// ErrInvalidScenario) holds for any of them.
func ParseScenario(data []byte) (*Scenario, error) {
	var s Scenario
	if err := strictyaml.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidScenario, err)
	}
	var problems *multierror.Error
	if _, err := s.pruneTimeout(); err != nil {
		problems = multierror.Append(problems, err)
	}
	for i, st := range s.Steps {
		problems = multierror.Append(problems, multierror.Prefix(st.validate(), fmt.Sprintf("step %d (%s):", i+1, st.label())))
	}
	if err := problems.ErrorOrNil(); err != nil {
		problems.ErrorFormat = listProblems
		return nil, fmt.Errorf("%w: %w", ErrInvalidScenario, err)
	}
	return &s, nil
}

// listProblems prints a single problem as it is, and several as a count
// followed by one indented line each, the first termsafe.MaxErrors of them.
func listProblems(errs []error) string {
	if len(errs) == 1 {
		return errs[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(errs))
	for _, err := range errs[:min(len(errs), termsafe.MaxErrors)] {
		b.WriteString("\n  " + err.Error())
	}
	if more := len(errs) - termsafe.MaxErrors; more > 0 {
		fmt.Fprintf(&b, "\n  and %d more not shown", more)
	}
	return b.String()
}

func (s *Scenario) pruneTimeout() (time.Duration, error) {
	if s.SubnetPruneTimeout == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s.SubnetPruneTimeout)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("subnetPruneTimeout %q is not a positive duration such as 10m", s.SubnetPruneTimeout)
	}
	return d, nil
}

func (st Step) label() string {
	if st.Name != "" {
		return st.Name
	}
	switch {
	case st.Apply != nil:
		return "apply"
	case st.Delete != nil:
		return "delete"
	case st.Restart:
		return "restart"
	case st.Advance != "":
		return "advance " + st.Advance
	case st.Converge:
		return "converge"
	case st.Expect != nil:
		return "expect"
	}
	return "empty"
}

func (st Step) validate() error {
	var problems *multierror.Error
	n := 0
	for _, set := range []bool{st.Apply != nil, st.Delete != nil, st.Restart, st.Advance != "", st.Converge, st.Expect != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		problems = multierror.Append(problems, errors.New("a step does exactly one of apply, delete, restart, advance, converge or expect"))
	}
	if st.Apply != nil && (st.Apply.Objects == "") == (st.Apply.File == "") {
		problems = multierror.Append(problems, errors.New("apply needs exactly one of objects or file"))
	}
	if st.Advance != "" {
		if d, err := time.ParseDuration(st.Advance); err != nil || d <= 0 {
			problems = multierror.Append(problems, fmt.Errorf("advance %q is not a positive duration such as 30s or 10m", st.Advance))
		}
	}
	for _, r := range st.Delete {
		if r.APIVersion == "" || r.Kind == "" || r.Name == "" {
			problems = multierror.Append(problems, fmt.Errorf("delete %q needs apiVersion, kind and name", r))
		}
	}
	for _, e := range st.Expect {
		if e.APIVersion == "" || e.Kind == "" || e.Name == "" {
			problems = multierror.Append(problems, fmt.Errorf("expect %q needs apiVersion, kind and name", e.ObjectRef))
		}
	}
	return problems.ErrorOrNil()
}

// DefaultMaxFileBytes is the most read of an apply step's file when
// Options.MaxFileBytes is 0: the CLI's default --max-input-size.
const DefaultMaxFileBytes = 8 << 20

// readObjects decodes the YAML documents of an apply step; its file is
// read up to limit bytes (0: DefaultMaxFileBytes).
func readObjects(a *Apply, dir string, limit int64) ([]*unstructured.Unstructured, error) {
	data := []byte(a.Objects)
	if a.File != "" {
		p := a.File
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if limit <= 0 {
			limit = DefaultMaxFileBytes
		}
		b, err := capread.File(p, limit)
		if err != nil {
			return nil, fmt.Errorf("cannot read apply file: %w", err)
		}
		data = b
	}
	return DecodeObjects(data)
}

// DecodeObjects decodes YAML documents into objects; empty documents are
// skipped, and each document needs apiVersion, kind and metadata.name. A
// syntax error in any document is refused, naming the document.
func DecodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	docs, err := strictyaml.Documents(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidScenario, err)
	}
	var out []*unstructured.Unstructured
	for _, d := range docs {
		i := d.Index
		var m map[string]any
		if err := strictyaml.UnmarshalJSON(d.JSON, &m); err != nil {
			return nil, fmt.Errorf("%w: document %d: %w", ErrInvalidScenario, i, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%w: document %d needs apiVersion, kind and metadata.name", ErrInvalidScenario, i)
		}
		if strings.TrimSpace(u.GetGenerateName()) != "" {
			return nil, fmt.Errorf("%w: document %d: generateName is not supported; give a name", ErrInvalidScenario, i)
		}
		out = append(out, u)
	}
	return out, nil
}
