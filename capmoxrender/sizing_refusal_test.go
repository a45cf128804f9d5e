package capmoxrender_test

import (
	"context"
	"errors"
	"strings"
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

// TestTimeoutBounds: each way a pool timeout can be wrong has its own
// message: too large names the bound (596524h is one hour past it), not
// "zero or negative"; the control, the bound itself, renders.
func TestTimeoutBounds(t *testing.T) {
	cases := map[string]struct{ value, want string }{
		"AtTheBound": {value: "596523h14m7s"},
		"TooLarge":   {value: "596524h", want: `nodeStartupTimeout "596524h" is too large: the most is 596523h14m7s (2^31-1 seconds, what the MachineHealthCheck's 32-bit seconds fields hold)`},
		"Zero":       {value: "0s", want: `nodeStartupTimeout "0s" must be a positive whole number of seconds, minutes or hours such as 5m: a zero or negative timeout would remediate the moment the condition flips`},
		"Negative":   {value: "-5m", want: `nodeStartupTimeout "-5m" must be a positive whole number`},
		"Fraction":   {value: "1500ms", want: `nodeStartupTimeout "1500ms" is not a whole number of seconds: write it in seconds, minutes or hours such as 90s or 5m`},
		"NotADur":    {value: "ten minutes", want: `nodeStartupTimeout "ten minutes" is not a duration: write a positive whole number of seconds, minutes or hours such as 5m or 1h30m`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := validNodes()
			n.Spec.NodeStartupTimeout = tc.value
			_, err := capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("the control: %v", err)
				}
				return
			}
			var r *capmoxrender.RefusalError
			if !errors.As(err, &r) || r.Field != "nodeStartupTimeout" || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v, want a refusal of nodeStartupTimeout beginning %q", err, tc.want)
			}
		})
	}
}
