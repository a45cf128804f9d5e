package strictyaml

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
)

// TestUnmarshalRefusesSecondDocument: input holding two documents of data
// is refused with their count and the line the second begins on, whatever
// separates them; one document with empty ones around it is read.
func TestUnmarshalRefusesSecondDocument(t *testing.T) {
	refused := map[string]struct {
		in          string
		count, line int
	}{
		"Two":             {"kind: A\n---\nkind: B\n", 2, 2},
		"Three":           {"kind: A\n---\nkind: B\n---\nkind: C\n", 3, 2},
		"LeadingMarker":   {"---\nkind: A\n---\nkind: B\n", 2, 3},
		"EmptyBetween":    {"kind: A\n---\n---\n# nothing\n---\nkind: B\n", 2, 5},
		"EndMarker":       {"kind: A\n...\n---\nkind: B\n", 2, 3},
		"CRLF":            {"kind: A\r\n---\r\nkind: B\r\n", 2, 2},
		"MarkerComment":   {"kind: A\n--- # b\nkind: B\n", 2, 2},
		"MarkerAtEnd":     {"kind: A\n--- {kind: B}", 2, 2},
		"Directive":       {"kind: A\n...\n%YAML 1.1\n---\nkind: B\n", 2, 3},
		"JSONThenYAML":    {"{\"kind\": \"A\"}\n---\n{\"kind\": \"B\"}\n", 2, 2},
		"NELBreak":        {"kind: A\u0085---\nkind: B\n", 2, 2},
		"ByteOrderMark":   {"\ufeff---\nkind: A\n---\nkind: B\n", 2, 3},
		"BlockScalarEnds": {"kind: |\n  A\n---\nkind: B\n", 2, 3},
	}
	for name, tc := range refused {
		t.Run(name, func(t *testing.T) {
			var d doc
			err := Unmarshal([]byte(tc.in), &d)
			var de *DocumentsError
			if !errors.As(err, &de) || de.Count != tc.count || de.Line != tc.line {
				t.Fatalf("Unmarshal(%q) = %v, want %d documents, the second on line %d", tc.in, err, tc.count, tc.line)
			}
			if err := UnmarshalOpen([]byte(tc.in), &d); !errors.As(err, &de) {
				t.Errorf("UnmarshalOpen(%q) = %v, want a *DocumentsError", tc.in, err)
			}
		})
	}
	read := map[string]string{
		"Plain":          "kind: A\n",
		"LeadingMarker":  "---\nkind: A\n",
		"TwoMarkers":     "---\n---\nkind: A\n",
		"TrailingMarker": "kind: A\n---\n",
		"NullAround":     "---\n~\n---\nkind: A\n---\nnull\n...\n",
		"CommentsFirst":  "# a comment\n\n---\nkind: A\n",
		"EndMarker":      "kind: A\n...\n",
		"Directive":      "%YAML 1.1\n---\nkind: A\n",
		"ByteOrderMark":  "\ufeff---\n---\nkind: A\n",
		"DashesInText":   "kind: A\nstorage: \"x\n ---\n y\"\n",
		"DashesIndented": "kind: A\ntenants:\n  - name: |\n     ---\n     x\n",
		"NotAMarker":     "kind: A\nstorage: ----\n",
		"JSON":           `{"kind": "A"}`,
	}
	for name, in := range read {
		t.Run("Reads"+name, func(t *testing.T) {
			var d doc
			if err := Unmarshal([]byte(in), &d); err != nil || d.Kind != "A" {
				t.Fatalf("Unmarshal(%q) = %v, kind %q; want kind A", in, err, d.Kind)
			}
		})
	}
	var d doc
	if err := Unmarshal([]byte("---\n---\n# nothing\n"), &d); err != nil || !reflect.DeepEqual(d, doc{}) {
		t.Errorf("empty documents only: %v, %+v; want nothing read", err, d)
	}
}

// TestUnmarshalSyntaxInLaterDocument: a syntax error or a key given twice
// in any document is refused, naming the document, even when the first
// holds all the data.
func TestUnmarshalSyntaxInLaterDocument(t *testing.T) {
	cases := map[string]struct {
		in    string
		index int
		want  string
	}{
		"Syntax":      {"kind: A\n---\nkind: [\n", 2, "yaml: line 3"},
		"AfterEmpty":  {"kind: A\n---\n---\nkind: B\n  x: y\n", 3, "yaml: line 5"},
		"Duplicate":   {"kind: A\n---\nkind: B\nkind: C\n", 2, `"kind" already set`},
		"AfterEnd":    {"kind: A\n...\nkind: B\n", 2, "did not find expected <document start>"},
		"InEmptyDocs": {"---\n---\n  ]\n---\nkind: A\n", 2, "did not find expected node content"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var d doc
			err := Unmarshal([]byte(tc.in), &d)
			var de *DocumentError
			if !errors.As(err, &de) || de.Index != tc.index || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Unmarshal(%q) = %v, want document %d: ...%s...", tc.in, err, tc.index, tc.want)
			}
			if _, err := Documents([]byte(tc.in)); !errors.As(err, &de) || de.Index != tc.index {
				t.Errorf("Documents(%q) = %v, want an error in document %d", tc.in, err, tc.index)
			}
		})
	}
}

// TestDocuments: every document that holds a value comes back, as JSON,
// with its place in the stream and the line it begins on.
func TestDocuments(t *testing.T) {
	in := "# objects\n---\nkind: A\n---\n---\n~\n--- {kind: B}\n...\n%YAML 1.1\n---\nkind: C\nx: |\n  ---\n"
	docs, err := Documents([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Document{
		{Index: 1, Line: 2, JSON: []byte(`{"kind":"A"}`)},
		{Index: 4, Line: 7, JSON: []byte(`{"kind":"B"}`)},
		{Index: 5, Line: 9, JSON: []byte(`{"kind":"C","x":"---\n"}`)},
	}
	if !reflect.DeepEqual(docs, want) {
		t.Errorf("Documents = %s, want %s", docs, want)
	}
	for _, in := range []string{"", "---\n", "# only\n", "~\n---\nnull\n"} {
		if docs, err := Documents([]byte(in)); err != nil || len(docs) != 0 {
			t.Errorf("Documents(%q) = %s, %v; want none", in, docs, err)
		}
	}
	if docs, err := Documents([]byte(`{"kind": "A"}`)); err != nil || len(docs) != 1 || docs[0].Index != 1 || docs[0].Line != 1 {
		t.Errorf("one JSON object: %s, %v", docs, err)
	}
}

func (d Document) String() string { return string(d.JSON) }

// v2Documents is the oracle: the documents the YAML parser under
// Unmarshal reads from a stream, as values, and its first error.
func v2Documents(data []byte) ([]any, error) {
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	dec.SetStrict(true)
	var out []any
	for {
		var v any
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return out, err
		}
		out = append(out, v)
	}
}

// FuzzDocuments: Documents agrees with the parser's own reading of the
// stream: it fails when the parser fails, and otherwise returns as many
// documents as the parser reads with a value, or refuses a stream whose
// documents its --- lines do not delimit, which only a directive or
// UTF-16 can cause. JSON refuses whatever holds two documents of data.
func FuzzDocuments(f *testing.F) {
	for _, seed := range []string{
		"a: 1\n---\nb: 2\n", "---\n---\na: 1\n", "a: |\n x\n---\n y\n", "--- a\n%b\n---\nc\n",
		"a: 1\n...\n%YAML 1.1\n---\nb\n", "'x\n---\ny'\n", "a: 1\u2028---\nb\n", "a: 1\r---\nb\n",
		"\ufeff---\na\n---\nb\n", "a: 1\n...\nb: 2\n", "...\n---\na\n", "--- |\nx\n---\ny\n",
		"\xff\xfea\x00\n\x00-\x00-\x00-\x00\n\x00b\x00", "a: 1\n--- \n#c\n", "[\n---\n]\n", " -\n00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		values, perr := v2Documents(data)
		docs, err := Documents(data)
		if perr != nil {
			if err == nil {
				t.Fatalf("the parser refuses %q (%v) and Documents reads it", data, perr)
			}
			return
		}
		if errors.Is(err, errApart) {
			if !bytes.Contains(data, []byte("%")) && !utf16(data) {
				t.Fatalf("Documents cannot tell the documents of %q apart, which holds no directive", data)
			}
			return
		}
		held := 0
		for _, v := range values {
			if v != nil {
				held++
			}
		}
		if err == nil && len(docs) != held {
			t.Fatalf("Documents reads %d documents of %q, the parser %d with a value", len(docs), data, held)
		}
		if _, err := JSON(data); held > 1 && err == nil {
			t.Fatalf("JSON admits %q, which holds %d documents", data, held)
		}
	})
}

// utf16 reports input the parser reads as UTF-16: it begins with a UTF-16
// byte order mark.
func utf16(data []byte) bool {
	return bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.HasPrefix(data, []byte{0xff, 0xfe})
}
