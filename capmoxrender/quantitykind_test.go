package capmoxrender_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// TestQuantityKindRefused: diskSize, proxmox.templateDiskSize,
// resources.memory and the other quantities given as a bool, a list or a
// map are refused as invalid input naming the field and the kind, never
// echoing the value (a list of 48 KiB gives a short message); a number or a
// string is read.
func TestQuantityKindRefused(t *testing.T) {
	base, err := os.ReadFile("testdata/scenarios/nodes-raw/input.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Each field's edit of the pool, giving it value.
	insert := func(line string) func(string) string {
		return func(v string) string {
			return strings.Replace(string(base), "  cluster: k8s-e2e\n", "  cluster: k8s-e2e\n  "+line+": "+v+"\n", 1)
		}
	}
	replace := func(from, to string) func(string) string {
		return func(v string) string { return strings.Replace(string(base), from, to+v+"\n", 1) }
	}
	fields := map[string]func(string) string{
		"diskSize":                 insert("diskSize"),
		"maxUnhealthy":             insert("maxUnhealthy"),
		"proxmox.templateDiskSize": replace("  proxmox:\n", "  proxmox:\n    templateDiskSize: "),
		"resources.memory":         replace("    memory: 4Gi\n", "    memory: "),
		"resources.cpu":            replace("    cpu: 2\n", "    cpu: "),
	}
	big := "[" + strings.Repeat("1, ", 16<<10) + "1]"
	for field, with := range fields {
		t.Run(field, func(t *testing.T) {
			if with("x") == string(base) {
				t.Fatal("the edit does not apply")
			}
			for _, good := range []string{"40", "40Gi", "'50%'"} {
				if _, err := capmoxrender.ParseKubernetesNodes([]byte(with(good))); err != nil {
					t.Fatalf("%s: %s is read: %v", field, good, err)
				}
			}
			for value, kind := range map[string]string{"true": "a bool", "[1, 2]": "a list", "{a: 1}": "a map", big: "a list"} {
				_, err := capmoxrender.ParseKubernetesNodes([]byte(with(value)))
				want := "invalid input: spec." + field + ": want a quantity, a number or a string such as 4Gi; got " + kind
				if !errors.Is(err, capmoxrender.ErrInput) || !strings.HasSuffix(err.Error(), want) || len(err.Error()) > 256 {
					t.Errorf("%s: %.40s: %.300v; want ...%s", field, value, err, want)
				}
			}
		})
	}
}
