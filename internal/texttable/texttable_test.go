package texttable

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestTable(t *testing.T) {
	long := strings.Repeat("word ", 40)
	tab := New(Main("NAME"), Main("TARGET"), Wide("EXTRA"), Note("WHY"))
	tab.Add("a", "short", "x", "")
	tab.Add("bb", strings.Repeat("t", 30)+" "+strings.Repeat("u", 100), "y", long)
	var def, wide strings.Builder
	tab.Write(&def, false)
	tab.Write(&wide, true)
	for _, line := range strings.Split(def.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > MaxWidth {
			t.Errorf("default line of %d runes: %q", n, line)
		}
	}
	for _, want := range []string{"NAME  TARGET", "    why: word word", "uuuu"} {
		if !strings.Contains(def.String(), want) {
			t.Errorf("default output lacks %q:\n%s", want, def.String())
		}
	}
	if strings.Contains(def.String(), "EXTRA") || strings.Contains(def.String(), "why: -") {
		t.Errorf("the default output shows a wide column or an empty note:\n%s", def.String())
	}
	wantWide := "NAME  TARGET" + strings.Repeat(" ", 127) + "EXTRA  WHY\n" +
		"a     short" + strings.Repeat(" ", 128) + "x      -\n" +
		"bb    " + strings.Repeat("t", 30) + " " + strings.Repeat("u", 100) + "  y      " + strings.TrimSpace(long) + "\n"
	if diff := cmp.Diff(wantWide, wide.String()); diff != "" {
		t.Errorf("-o wide (-want +got):\n%s", diff)
	}
}

func TestWrap(t *testing.T) {
	got := Wrap("aa bb cc "+strings.Repeat("x", 7)+" d", 5)
	want := []string{"aa bb", "cc", "xxxxxxx", "d"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("wrap (-want +got):\n%s", diff)
	}
}

func TestWrapLists(t *testing.T) {
	got := Wrap("CozyCapmox [VM.Allocate,VM.Audit,VM.Clone,Datastore.Audit]", 24)
	want := []string{"CozyCapmox [VM.Allocate,", "VM.Audit,VM.Clone,", "Datastore.Audit]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("wrap (-want +got):\n%s", diff)
	}
}
