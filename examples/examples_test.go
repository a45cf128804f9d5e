// Package examples_test builds every program under examples/ and checks
// what each prints.
package examples_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// cases are what each example prints.
var cases = map[string]struct {
	reason string
	want   string
}{
	"vlanalloc": {
		reason: "Two allocators sharing only a file-based record never hand out an ID twice, and a full zone says so.",
		want: `zone-a allocates 100-101,103-104 (102 is reserved)
replica a: web gets VLAN 100
replica b: db gets VLAN 101
replica a: cache gets VLAN 103
replica b: web gets VLAN 100
replica a: queue gets VLAN 104
replica b: released db
replica b: mail gets VLAN 101
replica a: extra: cannot allocate a VLAN for tenant-a/extra in zone "zone-a": no free VLAN left in the zone (exhausted: true)
reservation files: pxtenant-100.json pxtenant-101.json pxtenant-103.json pxtenant-104.json
`,
	},
	"ovngateway": {
		reason: "Both ports of a VPC get the same chassis order, a settled pass writes nothing, a leaving node costs one transaction per port.",
		want: `three trunk nodes (both ports of the VPC share one active chassis):
  vpc-a-web: ChassisAssigned, group px-vpc-a-web, active ch-2, ch-2=100 ch-3=90 ch-1=80, 1 transaction(s)
  vpc-a-db: ChassisAssigned, group px-vpc-a-db, active ch-2, ch-2=100 ch-3=90 ch-1=80, 1 transaction(s)
the same again (nothing to write):
  vpc-a-web: ChassisAssigned, group px-vpc-a-web, active ch-2, ch-2=100 ch-3=90 ch-1=80, 0 transaction(s)
  vpc-a-db: ChassisAssigned, group px-vpc-a-db, active ch-2, ch-2=100 ch-3=90 ch-1=80, 0 transaction(s)
pve-2 leaves the trunk:
  vpc-a-web: ChassisAssigned, group px-vpc-a-web, active ch-3, ch-3=100 ch-1=90, 1 transaction(s)
  vpc-a-db: ChassisAssigned, group px-vpc-a-db, active ch-3, ch-3=100 ch-1=90, 1 transaction(s)
released tenant-a/db: group deleted true
`,
	},
	"enginestep": {
		reason: "The custom step allocates, refuses a bad request for good, waits on a full zone and is woken by a release.",
		want: `after the first pass:
  broken: vlan none, finalizers []
  db: vlan 200, finalizers [example.com/vlan]
  web: vlan 201, finalizers [example.com/vlan]
cache arrives while the zone is full:
  broken: vlan none, finalizers []
  cache: vlan none, finalizers [example.com/vlan]
  db: vlan 200, finalizers [example.com/vlan]
  web: vlan 201, finalizers [example.com/vlan]
web is deleted; its VLAN goes to cache:
  broken: vlan none, finalizers []
  cache: vlan 201, finalizers [example.com/vlan]
  db: vlan 200, finalizers [example.com/vlan]
`,
	},
}

func TestExamples(t *testing.T) {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./vlanalloc", "./ovngateway", "./enginestep")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(bin, name))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v\n%s", name, err, stderr.String())
			}
			if diff := cmp.Diff(tc.want, string(out)); diff != "" {
				t.Errorf("%s\n%s output: -want +got:\n%s", tc.reason, name, diff)
			}
		})
	}
}
