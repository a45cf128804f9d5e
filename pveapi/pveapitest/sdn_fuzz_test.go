package pveapitest

import (
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
