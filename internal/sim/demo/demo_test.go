package demo_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/internal/sim/demo"
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

// TestDemoEvents: the release act ends with each network's Events, once per
// transition and in order: beta's network allocated, held, its gateway and
// VLAN released; alpha's waiting network refused, then given the VLAN. Once
// node-a has left, each gateway group has two chassis: NoFailover.
func TestDemoEvents(t *testing.T) {
	var out bytes.Buffer
	// Wide keeps each Event on one line for the parse below.
	if _, err := demo.RunWith(context.Background(), &out, demo.Options{Wide: true}); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	text := out.String()
	at := strings.Index(text, "the Events of the two networks")
	if at < 0 {
		t.Fatalf("the demo prints no Events:\n%s", text)
	}
	var got []string
	for _, line := range strings.Split(text[at:], "\n")[2:] {
		f := strings.Fields(line)
		if len(f) < 3 {
			break
		}
		got = append(got, f[0]+" "+f[1]+" "+f[2])
	}
	want := []string{
		"tenant-beta/subnet-b1 Normal VLANAllocated",
		"tenant-beta/subnet-b1 Warning NoFailover",
		"tenant-beta/subnet-b1 Warning DeletionHeld",
		"tenant-beta/subnet-b1 Normal GatewayReleased",
		"tenant-beta/subnet-b1 Normal VLANReleased",
		"tenant-alpha/subnet-a3 Warning ZoneExhausted",
		"tenant-alpha/subnet-a3 Normal VLANAllocated",
		"tenant-alpha/subnet-a3 Warning NoFailover",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Events -want +got:\n%s", diff)
	}
}

// TestVerdict: the last line says whether every invariant holds, and how
// many failed when some did.
func TestVerdict(t *testing.T) {
	r := demo.Result{Invariants: []sim.Invariant{{Name: "a", Holds: true}, {Name: "b", Holds: true}}}
	if got := r.Verdict(); got != "verdict: all 2 invariants hold" {
		t.Errorf("all hold: %q", got)
	}
	r.Invariants[1].Holds = false
	if got := r.Verdict(); got != "verdict: 1 of 2 invariants FAILED" {
		t.Errorf("one fails: %q", got)
	}
}
