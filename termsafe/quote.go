package termsafe

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxQuoted is the most bytes of a value that Quote and Cut show: the
// longest Kubernetes name (253 bytes) and an image reference pinned by
// digest are shown whole, and a value from a file of any size takes one
// line of the message that names it.
const MaxQuoted = 256

// Cut returns s when it has at most MaxQuoted bytes; otherwise its first
// MaxQuoted bytes (ending on a whole character) followed by "..." and the
// count of the bytes left out: `aaaa... (1048512 more bytes)`.
func Cut(s string) string {
	head, more := cut(s)
	if more == 0 {
		return s
	}
	return fmt.Sprintf("%s... (%d more bytes)", head, more)
}

// Quote is strconv.Quote of a value from the input, cut as Cut cuts it:
// `"aaaa"... (1048512 more bytes)`. Use it wherever a message quotes such
// a value; the quoting escapes every control character.
func Quote(s string) string {
	head, more := cut(s)
	if more == 0 {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s... (%d more bytes)", strconv.Quote(head), more)
}

// cut splits s after at most MaxQuoted bytes, on a character boundary,
// and counts the bytes after the split.
func cut(s string) (head string, more int) {
	if len(s) <= MaxQuoted {
		return s, 0
	}
	n := MaxQuoted
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], len(s) - n
}

// Quoted is a value that a format's %q quotes with Quote (its flags and
// width are not applied); every other verb prints it whole, as it prints a
// string.
type Quoted string

// Format implements fmt.Formatter.
func (q Quoted) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		_, _ = io.WriteString(f, Quote(string(q)))
		return
	}
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), string(q))
}

// QuoteArgs returns args with every plain string (of type string or
// another type of kind string that neither formats nor describes itself)
// as Quoted, for fmt.Sprintf: the format's %q of an input value is then
// bounded, and its %s of a sentence the code wrote is whole. args is not
// changed.
func QuoteArgs(args ...any) []any {
	return wrapArgs(args, func(v reflect.Value) (any, bool) {
		if v.Kind() == reflect.String {
			return Quoted(v.String()), true
		}
		return nil, false
	})
}

// wrapArgs returns a copy of args in which wrap replaces the values it
// takes; a value that formats or describes itself, an error and nil are
// kept as they are.
func wrapArgs(args []any, wrap func(reflect.Value) (any, bool)) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
		switch a.(type) {
		case fmt.Formatter, fmt.Stringer, error:
			continue
		}
		if v := reflect.ValueOf(a); v.IsValid() {
			if w, ok := wrap(v); ok {
				out[i] = w
			}
		}
	}
	return out
}

// Cutted is a value that every verb prints cut: %q as Quote, %s and %v as
// Cut (flags and width are not applied).
type Cutted string

// Format implements fmt.Formatter.
func (c Cutted) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		_, _ = io.WriteString(f, Quote(string(c)))
		return
	}
	_, _ = io.WriteString(f, Cut(string(c)))
}

// CutArgs is QuoteArgs for a message whose every string argument comes
// from an input or an API answer (names, states, an API's error text):
// each plain string, and each string list, is Cutted, so that %s prints it
// cut as well as %q. A sentence the code wrote that may be longer than
// MaxQuoted must not be passed through it. args is not changed.
func CutArgs(args ...any) []any {
	return wrapArgs(args, func(v reflect.Value) (any, bool) {
		switch {
		case v.Kind() == reflect.String:
			return Cutted(v.String()), true
		case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
			return Cutted(fmt.Sprint(v.Interface())), true
		}
		return nil, false
	})
}

// MaxLine is the longest line CutLines leaves whole: a message of a few
// sentences, each value in it cut at MaxQuoted, is far shorter.
const MaxLine = 4096

// CutLines cuts each line of s longer than MaxLine as Cut cuts a value,
// at MaxLine bytes: the last bound on a message printed whole, for text
// no caller could cut (an API's error body wrapped in an error).
func CutLines(s string) string {
	if len(s) <= MaxLine {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if len(l) > MaxLine {
			n := MaxLine
			for n > 0 && !utf8.RuneStart(l[n]) {
				n--
			}
			lines[i] = fmt.Sprintf("%s... (%d more bytes)", l[:n], len(l)-n)
		}
	}
	return strings.Join(lines, "\n")
}
