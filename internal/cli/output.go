package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pxsubstrate/pxsubstrate/termsafe"

	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"
)

// outputFormats is what -o takes on every command; jsonpath takes its
// template after "=", as kubectl's does.
const outputFormats = "-o table (the default), -o wide, -o json, -o yaml, -o name or -o jsonpath=TEMPLATE"

// checkFormat refuses an -o value no command knows, and a jsonpath
// template that does not parse, before any work is done.
func checkFormat(format string) error {
	switch format {
	case "", "table", "wide", "json", "yaml", "name":
		return nil
	}
	if tmpl, ok := strings.CutPrefix(format, "jsonpath="); ok {
		if err := jsonpath.New("output").Parse(tmpl); err != nil {
			return usageError{fmt.Errorf("-o jsonpath: %w", err)}
		}
		return nil
	}
	if format == "jsonpath" {
		return usageError{errors.New("-o jsonpath needs a template, as in -o jsonpath='{.items[*].metadata.name}'")}
	}
	return usageError{errorf("unknown output format %q: use %s", format, outputFormats)}
}

// tableFormat reports a format whose output is for people: the default,
// -o table or -o wide.
func (a *App) tableFormat() bool { return a.Format == "" || a.Format == "table" || a.Format == "wide" }

// Wide reports -o wide: tables print every column on the row's line.
func (a *App) Wide() bool { return a.Format == "wide" }

// namer is a command's output that lists objects, for -o name.
type namer interface{ objectNames() []string }

// Print writes v in the format chosen with -o. For the table formats it
// calls table with a writer that escapes control characters and aligns
// tab-separated cells; a nil table falls back to YAML, which reads well
// for nested values. -o name prints the names of the objects v lists (v
// must be a namer); -o jsonpath runs its template over v's JSON form.
func (a *App) Print(v any, table func(w io.Writer)) error {
	switch f := a.Format; {
	case f == "json":
		enc := json.NewEncoder(a.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case f == "name":
		n, ok := v.(namer)
		if !ok {
			return usageError{errors.New("-o name: this command lists no objects; use -o json, -o yaml or -o jsonpath")}
		}
		for _, name := range n.objectNames() {
			fmt.Fprintln(controlEscaper{W: a.Out}, name)
		}
		return nil
	case strings.HasPrefix(f, "jsonpath="):
		return a.printJSONPath(v, strings.TrimPrefix(f, "jsonpath="))
	case f == "yaml" || table == nil:
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("cannot render YAML: %w", err)
		}
		_, err = a.Out.Write(b)
		return err
	default:
		tw := tabwriter.NewWriter(a.Out, 0, 4, 2, ' ', 0)
		table(controlEscaper{W: tw})
		return tw.Flush()
	}
}

// printJSONPath runs tmpl over v as JSON sees it (field names as in -o json).
func (a *App) printJSONPath(v any, tmpl string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot render JSON: %w", err)
	}
	var data any
	if err := json.Unmarshal(b, &data); err != nil {
		return fmt.Errorf("cannot render JSON: %w", err)
	}
	jp := jsonpath.New("output")
	if err := jp.Parse(tmpl); err != nil {
		return usageError{fmt.Errorf("-o jsonpath: %w", err)}
	}
	var out bytes.Buffer
	if err := jp.Execute(&out, data); err != nil {
		return fmt.Errorf("-o jsonpath: %w", err)
	}
	if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
		out.WriteByte('\n')
	}
	_, err = controlEscaper{W: a.Out}.Write(out.Bytes())
	return err
}

// escapeControl escapes the control characters of s (termsafe.Escape), so
// that text from an input file, an API answer or an error cannot move the
// cursor, retitle the terminal or hide a line.
func escapeControl(s string) string { return termsafe.Escape(s) }

// controlEscaper escapes control characters on their way to a terminal.
type controlEscaper = termsafe.Writer
