package termsafe

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain ü\ttext\n":  "plain ü\ttext\n",
		"\x1b]0;title\x07": `\x1b]0;title\x07`,
		"\x9b2J\xff":       `\x9b2J\xff`,
		"\u009b31m":        `\x9b31m`,
		"a\x7fb":           `a\x7fb`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := EscapeLine("a\nb\tc\x1b"); got != `a\x0ab\x09c\x1b` {
		t.Errorf("EscapeLine = %q", got)
	}
	var b strings.Builder
	if _, err := (Writer{&b}).Write([]byte("x\x1b[2Jy\n")); err != nil || b.String() != "x\\x1b[2Jy\n" {
		t.Errorf("Writer wrote %q, %v", b.String(), err)
	}
}

// FuzzEscape: whatever goes in, what comes out is valid UTF-8 without a
// control character but newline and tab (none at all from EscapeLine),
// and plain text is unchanged.
func FuzzEscape(f *testing.F) {
	f.Add("plain ü\ttext\n")
	f.Add("\x1b]0;title\x07\x9b2J\xff")
	f.Fuzz(func(t *testing.T, s string) {
		got := Escape(s)
		if !utf8.ValidString(got) || strings.ContainsFunc(got, IsEscaped) {
			t.Fatalf("Escape(%q) = %q", s, got)
		}
		if utf8.ValidString(s) && !strings.ContainsFunc(s, IsEscaped) && got != s {
			t.Fatalf("Escape changed plain %q to %q", s, got)
		}
		if line := EscapeLine(s); strings.ContainsAny(line, "\n\t") || strings.ContainsFunc(line, IsEscaped) {
			t.Fatalf("EscapeLine(%q) = %q", s, line)
		}
	})
}

func TestJoin(t *testing.T) {
	if Join(nil, nil) != nil {
		t.Error("no error joins to nil")
	}
	errs := make([]error, 0, 1000)
	for i := range 1000 {
		errs = append(errs, fmt.Errorf("e%d", i), nil)
	}
	err := Join(errs...)
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != MaxErrors+1 || lines[0] != "e0" || lines[MaxErrors-1] != fmt.Sprintf("e%d", MaxErrors-1) ||
		lines[MaxErrors] != fmt.Sprintf("and %d more not shown (1000 in all)", 1000-MaxErrors) {
		t.Errorf("Join of 1000: %q", lines)
	}
	if err := Join(errs[:2*MaxErrors]...); strings.Count(err.Error(), "\n") != MaxErrors-1 {
		t.Errorf("Join of exactly MaxErrors adds no count: %q", err)
	}
	target := errors.New("x")
	if !errors.Is(Join(errs[0], target), target) {
		t.Error("Join keeps the errors for errors.Is")
	}
}

// TestQuote: a value of at most MaxQuoted bytes is quoted whole; a longer
// one is cut on a character boundary, with the count of the bytes left
// out, so that a 1 MB value yields a short line.
func TestQuote(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	cases := []struct{ in, quote, cut string }{
		{"u1.xlarge", `"u1.xlarge"`, "u1.xlarge"},
		{strings.Repeat("a", MaxQuoted), `"` + strings.Repeat("a", MaxQuoted) + `"`, strings.Repeat("a", MaxQuoted)},
		{long, `"` + long[:MaxQuoted] + `"... (1048320 more bytes)`, long[:MaxQuoted] + "... (1048320 more bytes)"},
		{strings.Repeat("a", MaxQuoted-1) + "ü" + long, `"` + strings.Repeat("a", MaxQuoted-1) + `"... (1048578 more bytes)`, strings.Repeat("a", MaxQuoted-1) + "... (1048578 more bytes)"},
		{"a\x1b]0;t\x07", `"a\x1b]0;t\a"`, "a\x1b]0;t\x07"},
	}
	for _, c := range cases {
		if got := Quote(c.in); got != c.quote {
			t.Errorf("Quote(%.80q) = %.120q, want %.120q", c.in, got, c.quote)
		}
		if got := Cut(c.in); got != c.cut {
			t.Errorf("Cut(%.80q) = %.120q, want %.120q", c.in, got, c.cut)
		}
	}
}

type kindOfString string

type named string

func (n named) String() string { return "named " + string(n) }

// TestQuoteArgs: through QuoteArgs, %q of a long string of any string type
// is cut and every other verb prints the value whole; a value that
// formats or describes itself, and a non-string, are left alone.
func TestQuoteArgs(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	got := fmt.Sprintf("instanceType %q: %s; %q %d %v %q %q", QuoteArgs(long, long, kindOfString(long), 7, errors.New("e"), named("n"), "ab")...)
	want := `instanceType "` + long[:MaxQuoted] + `"... (1048320 more bytes): ` + long + `; "` + long[:MaxQuoted] + `"... (1048320 more bytes) 7 e "named n" "ab"`
	if got != want {
		t.Errorf("got %d bytes %.200q, want %d bytes %.200q", len(got), got, len(want), want)
	}
	if got := fmt.Sprintf("%q", QuoteArgs(long)...); len(got) > 2*MaxQuoted {
		t.Errorf("%%q of 1 MB is %d bytes", len(got))
	}
}

// TestCutArgs: through CutArgs every verb prints a long string, or a long
// string list, cut; a short one prints as fmt prints it; a value that
// formats or describes itself, an error and a number are left alone.
func TestCutArgs(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	cut := long[:MaxQuoted] + "... (1048320 more bytes)"
	got := fmt.Sprintf("%s|%v|%q|%s|%v|%d|%v|%s", CutArgs(long, long, long, "short", []string{long}, 7, errors.New("e"), named("n"))...)
	want := cut + "|" + cut + `|"` + long[:MaxQuoted] + `"... (1048320 more bytes)|short|[` + long[:MaxQuoted-1] + "... (1048322 more bytes)|7|e|named n"
	if got != want {
		t.Errorf("got %d bytes %.300q, want %d bytes %.300q", len(got), got, len(want), want)
	}
	if got := fmt.Sprintf("node %s, %q, tags %v", CutArgs("pve1", "a b", []string{"a", "b"})...); got != `node pve1, "a b", tags [a b]` {
		t.Errorf("short values: %q", got)
	}
}

// TestCutLines: a line longer than MaxLine is cut with the count of the
// bytes left out; shorter lines, and the lines around a long one, are
// whole.
func TestCutLines(t *testing.T) {
	short := "Error: a message\nand its second line"
	if got := CutLines(short); got != short {
		t.Errorf("CutLines(%q) = %q", short, got)
	}
	long := strings.Repeat("y", 1<<20)
	got := CutLines("first\n" + long + "\nlast")
	want := "first\n" + long[:MaxLine] + "... (1044480 more bytes)\nlast"
	if got != want {
		t.Errorf("got %d bytes %.100q..., want %d bytes", len(got), got, len(want))
	}
}
