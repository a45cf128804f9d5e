package demo_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/internal/sim/demo"
)

func TestDemoPlatformActs(t *testing.T) {
	var out bytes.Buffer
	res, err := demo.Run(context.Background(), &out)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	got := map[string]bool{}
	for _, inv := range res.Invariants {
		got[inv.Name] = inv.Holds
	}
	want := map[string]bool{
		demo.CheckAuditClean:     true,
		demo.CheckTemplateTags:   true,
		demo.CheckRenderRefusals: true,
		demo.CheckAdmission:      true,
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			delete(got, name)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("platform invariants: -want +got:\n%s\n%s", diff, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"0 findings; plan again: 0 changes",                                            // the audit is clean and the apply idempotent
		"9000  talos-v1.13.6-ce4c9805  pve   true",                                     // the template exists
		"template 9001 with the same tags: refused",                                    // the tag set is taken
		"ProxmoxMachineTemplate  kubernetes-prod-md0-",                                 // the pool rendered
		"steals-beta  vmbr1/3904/subnet-b1  false     proxmox-network-machine-binding", // refused
		"worker-a1    vmbr1/3901/subnet-a1  true",                                      // admitted
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo output lacks %q:\n%s", want, text)
		}
	}
	for _, secret := range []string{"token_secret", "RootSecret"} {
		if strings.Contains(text, secret) {
			t.Errorf("the demo output mentions %q", secret)
		}
	}
}
