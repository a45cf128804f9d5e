package capmoxrender_test

import (
	"context"
	"errors"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// TestSmallInstanceTypeNamed: a pool sized by instanceType alone whose
// memory is below a Talos worker's is refused naming instanceType, where
// the size came from, not resources.memory, which the pool does not set;
// a resources.memory that is too small is still refused by its own name;
// the control, u1.micro (1Gi), renders.
func TestSmallInstanceTypeNamed(t *testing.T) {
	cases := map[string]struct {
		instanceType string
		memory       *capmoxrender.Quantity
		field, want  string
	}{
		"Control": {instanceType: "u1.micro"},
		"InstanceTypeOnly": {instanceType: "u1.nano", field: "instanceType",
			want: `instanceType "u1.nano" (512Mi of memory; resources.memory is not set) gives each worker 512 MiB; a Talos Linux worker needs at least 1024 MiB (1Gi, Talos's system requirements) to boot and join: name an instanceType with 1Gi or more, or set resources.memory: 1Gi or more (2Gi is Talos's recommendation)`},
		"ResourcesWin": {instanceType: "u1.xlarge", memory: q("512Mi"), field: "resources.memory",
			want: `resources.memory 512Mi gives each worker 512 MiB; a Talos Linux worker needs at least 1024 MiB (1Gi, Talos's system requirements) to boot and join: ask for 1Gi or more (2Gi is Talos's recommendation)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := validNodes()
			n.Spec.InstanceType = tc.instanceType
			n.Spec.Resources.Memory = tc.memory
			_, err := capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{})
			checkRefusal(t, name, err, tc.want)
			var r *capmoxrender.RefusalError
			if errors.As(err, &r) && r.Field != tc.field {
				t.Errorf("the refusal names field %q, want %q", r.Field, tc.field)
			}
		})
	}
}
