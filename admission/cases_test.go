package admission

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// input is one admission request with the namespace it lands in.
type input struct {
	op   string
	kind metav1.GroupVersionKind
	ns   *Namespace // the request's namespace object; nil: it does not exist
	obj  m
	old  m
}

func (in input) namespace() string {
	meta := in.obj["metadata"].(m)
	return meta["namespace"].(string)
}

func (in input) request(t fataler) Request {
	op := in.op
	if op == "" {
		op = OperationCreate
	}
	return Request{Operation: op, Kind: in.kind, Namespace: in.namespace(), Object: js(t, in.obj), OldObject: js(t, in.old)}
}

// pairCase is a refusal and an admitted control that differs from it in one
// field.
type pairCase struct {
	reason   string
	refused  input
	admitted input
	policy   string
	message  string
}

func runPairs(t *testing.T, cfg Config, cases map[string]pairCase) {
	t.Helper()
	v := mustValidator(t, cfg)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := v.Review(tc.admitted.request(t), tc.admitted.ns)
			if err != nil || !got.Allowed {
				t.Fatalf("control must be admitted (%s): %+v %v", tc.reason, got, err)
			}
			got, err = v.Review(tc.refused.request(t), tc.refused.ns)
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			want := Decision{Policy: tc.policy, Message: tc.message}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// attachmentMessage is the refusal of an attachment policy in tenant-a.
func attachmentMessage(static string, refused ...string) string {
	return static + " (tenant-a; a multus default network as tenant-a/<name>); refused: " + strings.Join(refused, ", ")
}

// allPairCases is every table of this package, for the differential test.
func allPairCases() map[string]pairCase {
	out := map[string]pairCase{}
	for _, set := range []map[string]pairCase{machineCases(), vmCases(), podCases(), immutableCases()} {
		for k, v := range set {
			out[k] = v
		}
	}
	return out
}
