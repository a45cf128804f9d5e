// Package termsafe makes text from a file, an API answer or an error safe
// to print on a terminal: control characters (newline and tab excepted)
// and bytes that are not UTF-8 become \xNN, so that no input can move the
// cursor, retitle the terminal or hide a line. It imports only the
// standard library, for every reader of hostile input to share.
package termsafe

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Escape writes the control characters of s (other than newline and tab)
// and bytes that are not UTF-8 as \xNN; other text is unchanged.
func Escape(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, IsEscaped) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case IsEscaped(r):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// EscapeLine is Escape for text that must stay on one line, such as a
// line quoted in a warning: newline and tab are escaped too.
func EscapeLine(s string) string {
	s = Escape(s)
	if !strings.ContainsAny(s, "\n\t") {
		return s
	}
	return strings.NewReplacer("\n", `\x0a`, "\t", `\x09`).Replace(s)
}

// IsEscaped reports the C0 and C1 control characters and DEL, newline and
// tab excepted: the runes Escape rewrites.
func IsEscaped(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}

// Writer escapes what is written through it on its way to W.
type Writer struct{ W io.Writer }

func (c Writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(c.W, Escape(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// MaxErrors is the most errors Join keeps.
const MaxErrors = 20

// Join is errors.Join of the first MaxErrors non-nil errors of errs and,
// when there are more, of one more error that counts them: a file of
// thousands of mistakes yields a screenful and a count, never a flood.
func Join(errs ...error) error {
	kept := make([]error, 0, min(len(errs), MaxErrors+1))
	more := 0
	for _, err := range errs {
		switch {
		case err == nil:
		case len(kept) < MaxErrors:
			kept = append(kept, err)
		default:
			more++
		}
	}
	if more > 0 {
		kept = append(kept, fmt.Errorf("and %d more not shown (%d in all)", more, more+MaxErrors))
	}
	return errors.Join(kept...)
}
