package cli

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// errorf is fmt.Errorf whose %q quotes a string as termsafe.Quote does,
// cut to termsafe.MaxQuoted bytes: a flag value or a value read from an
// input is named in the message, never echoed whole (a --tags of 15,000
// tags is one line).
func errorf(format string, args ...any) error {
	return fmt.Errorf(format, termsafe.QuoteArgs(args...)...)
}

// goTypeError matches encoding/json's type mismatch as sigs.k8s.io/yaml
// reports it: the value's JSON kind, the Go struct and field path, and the
// Go type it would have needed.
var goTypeError = regexp.MustCompile(`json: cannot unmarshal (\w+) into Go (?:struct field [\w.]*?\.|value of type )?([\w.\[\]]*?)(?: of type ([\w.\[\]*]+))?$`)

// decodeNoise are the wrappers sigs.k8s.io/yaml puts around a decoding
// error; they name the library's steps, not the input.
var decodeNoise = strings.NewReplacer("error unmarshaling JSON: while decoding JSON: ", "", "json: unknown field", "unknown field")

// plainError rewrites a decoding error so that it speaks of the input's
// fields and YAML kinds, never of Go types: "json: cannot unmarshal array
// into Go struct field Tenant.tenants.storage of type string" becomes
// "field tenants.storage: a list where a string belongs".
func plainError(msg string) string {
	msg = decodeNoise.Replace(msg)
	lines := strings.Split(msg, "\n")
	for i, line := range lines {
		at := strings.Index(line, "json: cannot unmarshal ")
		if at < 0 {
			continue
		}
		m := goTypeError.FindStringSubmatch(line[at:])
		if m == nil {
			continue
		}
		got, field, want := kindOfJSON(m[1]), m[2], yamlKind(m[3])
		text := got + " where " + want + " belongs"
		if m[3] == "" { // "into Go value of type T": no field
			text = got + " where " + yamlKind(m[2]) + " belongs"
			field = ""
		}
		if field != "" {
			text = "field " + field + ": " + text
		}
		lines[i] = line[:at] + text
	}
	return strings.Join(lines, "\n")
}

// kindOfJSON names a JSON kind as YAML readers know it.
func kindOfJSON(kind string) string {
	switch kind {
	case "array":
		return "a list"
	case "object":
		return "a mapping"
	case "number":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	return "a value"
}

// yamlKind names the YAML kind a Go type reads.
func yamlKind(goType string) string {
	goType = strings.TrimLeft(goType, "*")
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["):
		return "a mapping"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint"):
		return "a whole number"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	}
	return "a mapping"
}
