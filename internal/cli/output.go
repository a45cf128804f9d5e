package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// Print writes v in the format chosen with -o. For the table format it calls
// table with a tab-aligned writer; a nil table falls back to YAML, which
// reads well for nested values.
func (a *App) Print(v any, table func(w io.Writer)) error {
	switch {
	case a.Format == "json":
		enc := json.NewEncoder(a.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case a.Format == "yaml" || table == nil:
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("cannot render YAML: %w", err)
		}
		_, err = a.Out.Write(b)
		return err
	default:
		tw := tabwriter.NewWriter(a.Out, 0, 4, 2, ' ', 0)
		table(controlEscaper{tw})
		return tw.Flush()
	}
}

// escapeControl writes the control characters of s (other than newline
// and tab) and bytes that are not UTF-8 as \xNN, so that text from an
// input file, an API answer or an error cannot move the cursor, retitle
// the terminal or hide a line.
func escapeControl(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, isEscaped) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case isEscaped(r):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isEscaped reports the C0 and C1 control characters and DEL, newline and
// tab excepted.
func isEscaped(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}

// controlEscaper escapes control characters on their way to a terminal.
type controlEscaper struct{ w io.Writer }

func (c controlEscaper) Write(p []byte) (int, error) {
	if _, err := io.WriteString(c.w, escapeControl(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
