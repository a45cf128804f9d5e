package pvefake

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

func FuzzVLANList(f *testing.F) {
	for _, s := range []string{"2-4094", "100 200-300", "5,6;7", "1", "4095", "300-200", "", " ", "2-", "-5", "07"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if checkVLANList(v) != nil {
			return
		}
		items := splitVLANList(v)
		for _, item := range items {
			lo, hi, err := parseVLANItem(item)
			if err != nil || lo < 2 || hi > 4094 || lo > hi {
				t.Fatalf("accepted list %q has item %q = %d-%d (%v)", v, item, lo, hi, err)
			}
		}
		if err := checkVLANList(strings.Join(items, " ")); err != nil {
			t.Fatalf("the items of accepted %q do not parse joined by spaces: %v", v, err)
		}
	})
}

func FuzzGeneratedSDNFile(f *testing.F) {
	for _, s := range []string{"#version:3\n\nauto pxa0100\niface pxa0100\n\tbridge_ports vmbr0.100\n\tbridge_stp off\n",
		"", "#version:x\n", "#version:007", "iface a\n\tb\niface a\n", "\tstray\niface \n\tx\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, file string) {
		stanzas := parseStanzas(file)
		var b strings.Builder
		for _, name := range sortedKeys(stanzas) {
			fmt.Fprintf(&b, "\nauto %s\niface %s\n%s", name, name, stanzas[name])
		}
		if again := parseStanzas(b.String()); !maps.Equal(again, stanzas) {
			t.Fatalf("%q: stanzas %q read back as %q", file, stanzas, again)
		}
		n := &sdnState{nodeFiles: map[string]string{"pve": file}}
		if v := n.localSDNVersion("pve"); v < 0 || (v > 0 && !strings.HasPrefix(file, "#version:")) {
			t.Fatalf("%q: version %d", file, v)
		}
	})
}
