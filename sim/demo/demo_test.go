package demo_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/sim/demo"
)

func TestDemo(t *testing.T) {
	var out bytes.Buffer
	res, err := demo.Run(context.Background(), &out)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if !res.OK() {
		t.Fatalf("an invariant failed:\n%s", out.String())
	}
	if len(res.Invariants) < 5 || len(res.Acts) != len(demo.Acts) {
		t.Fatalf("acts %v, invariants %v", res.Acts, res.Invariants)
	}
	text := out.String()
	for _, want := range []string{
		"subnet-a3  3904",       // the waiting network got the released VLAN
		"ZoneExhausted",         // the fourth network waited
		"InUse (deleting)",      // beta's network was held
		"vmbr1/3901/subnet-a1,", // the namespace annotation
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo output lacks %q:\n%s", want, text)
		}
	}
}
