package pvesdn

import (
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/vlanalloc"
)

// FuzzParseVIDs: bridge-vids parse into IDs of 1-4094; what does not parse
// is returned, never silently dropped; the parsed set printed as runs
// parses back to itself.
func FuzzParseVIDs(f *testing.F) {
	for _, s := range []string{"2-4094", "100 200-300", "5,6;7", "4095", "300-200", "", "a-b", " 10\t20 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		set, bad := parseVIDs(v)
		items := strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' || r == ';' || r == '\t' })
		if len(bad) > len(items) {
			t.Fatalf("%q: %d bad items of %d", v, len(bad), len(items))
		}
		for _, vid := range set.IDs() {
			if vid < vlanalloc.MinVID || vid > vlanalloc.MaxVID {
				t.Fatalf("%q gives VLAN %d", v, vid)
			}
		}
		again, bad2 := parseVIDs(strings.ReplaceAll(set.String(), ",", " "))
		if len(bad2) > 0 || again.String() != set.String() {
			t.Fatalf("%q: %s does not parse back (%v)", v, set.String(), bad2)
		}
		if len(bad) == 0 && len(items) > 0 && set.Len() == 0 {
			t.Fatalf("%q: every item parsed but no VLAN", v)
		}
	})
}
