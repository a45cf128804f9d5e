package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// A YAML stream holds documents one after another, each opened by a line
// that begins with "---". A document that holds nothing (only comments, or
// ~ or null) is not data: "---\n---\nkind: X\n" holds one document of
// data, kind X. Unmarshal and UnmarshalOpen read input that holds one
// document of data and refuse input with more, as *DocumentsError;
// Documents reads every one.

// Document is one document of a YAML stream that holds a value.
type Document struct {
	// Index is its place among the stream's documents, from 1; empty
	// documents are counted.
	Index int
	// Line is the line it begins on, from 1: its "---" line, or its first
	// line when it is the first document and has no "---".
	Line int
	// JSON is the document as JSON.
	JSON []byte
}

// DocumentsError refuses input that holds more than one document of data
// where one is read.
type DocumentsError struct {
	// Count is how many documents of the input hold a value.
	Count int
	// Line is the line the second of them begins on.
	Line int
}

// Error reads "holds 2 YAML documents (the second begins on line 7), and
// one is read: give one document".
func (e *DocumentsError) Error() string {
	return fmt.Sprintf("holds %d YAML documents (the second begins on line %d), and one is read: give one document", e.Count, e.Line)
}

// DocumentError is an error in one document of a stream.
type DocumentError struct {
	// Index is the document's place in the stream, from 1.
	Index int
	Err   error
}

func (e *DocumentError) Error() string { return fmt.Sprintf("document %d: %v", e.Index, e.Err) }

func (e *DocumentError) Unwrap() error { return e.Err }

// errApart refuses a stream whose documents do not line up with its
// "---" lines, which only YAML directives or a UTF-16 encoding can cause.
var errApart = errors.New("its YAML documents cannot be told apart by their --- lines; write it in UTF-8 without % directives")

// Documents returns the documents of a YAML (or JSON) stream that hold a
// value, in order, each as JSON; empty ones are left out. A syntax error or
// a key given twice in any document is an error naming the document
// (*DocumentError), so that no document is skipped unread.
func Documents(data []byte) ([]Document, error) {
	held, spans, err := parse(data)
	if err != nil {
		return nil, err
	}
	var out []Document
	for i, s := range spans {
		if !held[i] {
			continue
		}
		j, err := convert(data[s.start:s.end])
		if err != nil {
			return nil, documentError(i, err)
		}
		out = append(out, Document{Index: i + 1, Line: s.line, JSON: j})
	}
	return out, nil
}

// JSON converts the one document of data that holds a value to JSON; a
// key given twice in a mapping is an error. Input that holds more than one
// such document is refused as *DocumentsError; input that holds none is
// null. An error in the first document is the parser's, which names its
// line; one in a later document is a *DocumentError.
func JSON(data []byte) ([]byte, error) {
	held, spans, err := parse(data)
	if de := (*DocumentError)(nil); errors.As(err, &de) && de.Index == 1 {
		return nil, de.Err
	}
	if err != nil {
		return nil, err
	}
	var at []int
	for i, h := range held {
		if h {
			at = append(at, i)
		}
	}
	switch len(at) {
	case 0:
		return []byte("null"), nil
	case 1:
		s := spans[at[0]]
		j, err := convert(data[s.start:s.end])
		if err != nil && at[0] > 0 {
			return nil, documentError(at[0], err)
		}
		return j, err
	}
	return nil, &DocumentsError{Count: len(at), Line: spans[at[1]].line}
}

// parse reads every document of data with the parser Unmarshal uses, and
// returns, for each, whether it holds a value and where it is. The parser
// reads the whole stream: a document after the first, or a syntax error
// after the first document's end, is found whether or not a "---" line
// opens it.
func parse(data []byte) (held []bool, spans []span, err error) {
	if held, err = stream(data); err != nil || len(held) == 0 {
		return nil, nil, err
	}
	spans = cut(data)
	if !spans[0].content {
		spans = spans[1:] // comments or nothing before the first ---
	}
	switch {
	case len(spans) == len(held):
		return held, spans, nil
	case len(held) == 1:
		return held, []span{{end: len(data), line: 1}}, nil
	}
	return nil, nil, errApart
}

// convert converts one document to JSON.
func convert(doc []byte) ([]byte, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err == nil && isNull(j) {
		return nil, errApart // the parser found a value where this has none
	}
	return j, err
}

// documentError names the document at index i (from 0) in err, unless err
// is about the whole stream.
func documentError(i int, err error) error {
	if errors.Is(err, errApart) {
		return err
	}
	return &DocumentError{Index: i + 1, Err: err}
}

func isNull(j []byte) bool { return bytes.Equal(bytes.TrimSpace(j), []byte("null")) }

// stream parses every document of data with the parser Unmarshal uses and
// reports, for each, whether it holds a value. It stops at the first
// error, naming its document.
func stream(data []byte) ([]bool, error) {
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	dec.SetStrict(true)
	var held []bool
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return held, nil
		}
		if err != nil {
			return nil, &DocumentError{Index: len(held) + 1, Err: err}
		}
		held = append(held, v != nil)
	}
}

// span is the stretch of the input from one document marker to the next.
type span struct {
	start, end, line int
	// content is whether the stretch holds a line other than blanks and
	// comments; only the first stretch, the one before any "---", can
	// hold none and then is no document.
	content bool
}

// cut splits data before each line that opens a document: one that begins
// with "---" followed by a space, a tab, a line break or the end of the
// input. The parser opens a document at each such line and nowhere else
// (inside a quoted scalar one is an error; a block scalar's lines are
// indented), so each stretch is one document. Directive lines (%YAML,
// %TAG) right before such a line go with the document it opens.
func cut(data []byte) []span {
	var spans []span
	cur := span{line: 1}
	directive, directiveLine := -1, 0 // the first directive line since the last line of content
	line := 1
	for pos := 0; pos < len(data); line++ {
		end, next := lineEnd(data, pos)
		text := data[pos:end]
		if pos == 0 {
			text = bytes.TrimPrefix(text, []byte("\xef\xbb\xbf"))
		}
		switch {
		case opens(text):
			at, atLine := pos, line
			if directive >= 0 {
				at, atLine = directive, directiveLine
			}
			cur.end = at
			spans = append(spans, cur)
			cur = span{start: at, line: atLine, content: true}
			directive = -1
		case len(text) > 0 && text[0] == '%':
			if directive < 0 {
				directive, directiveLine = pos, line
			}
		case blank(text):
		default:
			cur.content = true
			directive = -1
		}
		pos = next
	}
	cur.end = len(data)
	return append(spans, cur)
}

// opens reports whether line begins with "---" followed by a space, a tab
// or nothing.
func opens(line []byte) bool {
	return bytes.HasPrefix(line, []byte("---")) && (len(line) == 3 || line[3] == ' ' || line[3] == '\t')
}

// blank reports a line of spaces and tabs, or a comment.
func blank(line []byte) bool {
	t := bytes.TrimLeft(line, " \t")
	return len(t) == 0 || t[0] == '#'
}

// lineEnd returns where the line at pos ends and where the next begins.
// The line breaks are those of YAML 1.1, which the parser follows: LF, CR,
// CR LF, NEL, LS and PS.
func lineEnd(data []byte, pos int) (end, next int) {
	for i := pos; i < len(data); i++ {
		switch data[i] {
		case '\n':
			return i, i + 1
		case '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				return i, i + 2
			}
			return i, i + 1
		case 0xc2: // NEL is C2 85
			if i+1 < len(data) && data[i+1] == 0x85 {
				return i, i + 2
			}
		case 0xe2: // LS is E2 80 A8, PS E2 80 A9
			if i+2 < len(data) && data[i+1] == 0x80 && (data[i+2] == 0xa8 || data[i+2] == 0xa9) {
				return i, i + 3
			}
		}
	}
	return len(data), len(data)
}
