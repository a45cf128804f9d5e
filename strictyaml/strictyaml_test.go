package strictyaml

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

type inner struct {
	Name    string `json:"name"`
	VMRange string `json:"vmRange,omitempty"`
}

type ref struct {
	Kind string `json:"kind"`
}

type doc struct {
	ref      `json:",inline"`
	Tenants  []inner           `json:"tenants"`
	ByName   map[string]*inner `json:"byName,omitempty"`
	Storage  string            `json:"storage,omitempty"`
	Ignored  string            `json:"-"`
	Count    int               `json:"count,omitempty"`
	Features map[string]any    `json:"features,omitempty"`
}

func TestUnmarshalAdmits(t *testing.T) {
	var d doc
	in := "kind: Plan\ntenants:\n- name: a\n  vmRange: 10-20\nbyName:\n  x: {name: b}\nstorage: s\ncount: 3\nfeatures: {a: 1}\n"
	if err := Unmarshal([]byte(in), &d); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	want := doc{ref: ref{Kind: "Plan"}, Tenants: []inner{{Name: "a", VMRange: "10-20"}}, ByName: map[string]*inner{"x": {Name: "b"}},
		Storage: "s", Count: 3, Features: map[string]any{"a": int64(1)}}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("got %+v, want %+v", d, want)
	}
}

func TestUnmarshalRefuses(t *testing.T) {
	cases := map[string]struct {
		in   string
		want []string // each must appear in the error
	}{
		"CaseMismatch":        {"tenants:\n- Name: a\n", []string{`unknown field "tenants[0].Name"; did you mean "name"?`}},
		"BothCases":           {"tenants:\n- name: a\n  Name: b\n", []string{`unknown field "tenants[0].Name"; did you mean "name"?`}},
		"UpperCase":           {"NAME: x\nkind: K\n", []string{`unknown field "NAME"`}},
		"Typo":                {"storag: x\n", []string{`unknown field "storag"; did you mean "storage"?`}},
		"Promoted":            {"Kind: x\n", []string{`unknown field "Kind"; did you mean "kind"?`}},
		"InMap":               {"byName:\n  x: {vmrange: 1-2}\n", []string{`unknown field "byName.x.vmrange"; did you mean "vmRange"?`}},
		"NoGuess":             {"zzz: 1\n", []string{`unknown field "zzz"`}},
		"DashField":           {"Ignored: x\n", []string{`unknown field "Ignored"`}},
		"Several":             {"Storage: a\ncounts: 1\n", []string{`unknown field "Storage"; did you mean "storage"?`, `unknown field "counts"; did you mean "count"?`}},
		"DuplicateYAML":       {"storage: a\nstorage: b\n", []string{`"storage" already set`}},
		"DuplicateNestedYAML": {"tenants:\n- name: a\n  name: b\n", []string{`"name" already set`}},
		"WrongType":           {"tenants: x\n", []string{"cannot unmarshal string"}},
		"BadYAML":             {"tenants: [\n", []string{"yaml"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var d doc
			err := Unmarshal([]byte(tc.in), &d)
			if err == nil {
				t.Fatalf("Unmarshal(%q) = nil, want an error", tc.in)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if name == "NoGuess" && strings.Contains(err.Error(), "did you mean") {
				t.Errorf("error %q guesses a field for a key close to none", err)
			}
		})
	}
}

func TestUnmarshalJSONDuplicate(t *testing.T) {
	var d doc
	err := UnmarshalJSON([]byte(`{"storage":"a","tenants":[{"name":"x","name":"y"}],"storage":"b"}`), &d)
	got := FieldErrors(err)
	want := []*FieldError{{Path: "storage", Duplicate: true}, {Path: "tenants[0].name", Duplicate: true}}
	if len(got) != len(want) {
		t.Fatalf("FieldErrors(%v) = %v, want %v", err, got, want)
	}
	for _, w := range want {
		if !containsField(got, *w) {
			t.Errorf("FieldErrors(%v) = %v, missing %+v", err, got, w)
		}
	}
	if !strings.Contains(err.Error(), `duplicate field "storage"; give it once`) {
		t.Errorf("error %q does not name the duplicate", err)
	}
}

func containsField(fs []*FieldError, w FieldError) bool {
	for _, f := range fs {
		if *f == w {
			return true
		}
	}
	return false
}

func TestFieldErrors(t *testing.T) {
	var d doc
	err := Unmarshal([]byte("Storage: a\ntenants: [{Name: b}]\n"), &d)
	wrapped := errors.Join(errors.New("context"), err)
	got := FieldErrors(wrapped)
	want := []FieldError{{Path: "Storage", Suggestion: "storage"}, {Path: "tenants[0].Name", Suggestion: "name"}}
	if len(got) != len(want) {
		t.Fatalf("FieldErrors = %v, want %v", got, want)
	}
	for i := range want {
		if *got[i] != want[i] {
			t.Errorf("FieldErrors[%d] = %+v, want %+v", i, *got[i], want[i])
		}
	}
	if FieldErrors(errors.New("plain")) != nil || FieldErrors(nil) != nil {
		t.Error("FieldErrors finds fields in an error that has none")
	}
}

func TestSplitPath(t *testing.T) {
	cases := map[string][]string{
		"a":           {"a"},
		"a.b[2].c":    {"a", "b", "[2]", "c"},
		"[0].x":       {"[0]", "x"},
		"m[0][1]":     {"m", "[0]", "[1]"},
		"key[odd":     {"key[odd"},
		"tenants[0]]": {"tenants", "[0]", "]"},
	}
	for in, want := range cases {
		if got := splitPath(in); !reflect.DeepEqual(got, want) {
			t.Errorf("splitPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDistance(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"storag", "storage", 1}, {"kitten", "sitting", 3}, {"abc", "abc", 0}}
	for _, c := range cases {
		if got := distance(c.a, c.b); got != c.want {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestUnmarshalOpen(t *testing.T) {
	var d doc
	if err := UnmarshalOpen([]byte("kind: K\nstatus: {ready: true}\ntenants: [{name: a, extra: 1}]\nstorag: x\n"), &d); err != nil {
		t.Fatalf("keys no field reads must pass: %v", err)
	}
	if d.Kind != "K" || len(d.Tenants) != 1 || d.Tenants[0].Name != "a" || d.Storage != "" {
		t.Fatalf("decoded %+v", d)
	}
	cases := map[string]struct{ in, want string }{
		"Miscased":   {"Kind: K\n", `unknown field "Kind"; did you mean "kind"?`},
		"BothCases":  {"tenants: [{name: a, NAME: b}]\n", `unknown field "tenants[0].NAME"; did you mean "name"?`},
		"Duplicate":  {"kind: a\nkind: b\n", `key "kind" already set`},
		"WrongType":  {"kind: [a]\n", "cannot unmarshal array"},
		"Syntax":     {"kind: [\n", "yaml"},
		"TypoPasses": {"storag: x\nKind: K\n", `unknown field "Kind"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var d doc
			err := UnmarshalOpen([]byte(tc.in), &d)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("UnmarshalOpen(%q) = %v, want an error naming %s", tc.in, err, tc.want)
			}
			if strings.Contains(err.Error(), "storag") {
				t.Errorf("a key no field reads is refused: %v", err)
			}
		})
	}
	err := UnmarshalOpenJSON([]byte(`{"kind": "a", "status": 1, "kind": "b"}`), &d)
	if got := FieldErrors(err); len(got) != 1 || *got[0] != (FieldError{Path: "kind", Duplicate: true}) {
		t.Errorf("UnmarshalOpenJSON of a key given twice = %v, want the duplicate alone", err)
	}
}

// TestUnmarshalBounded: a document of a thousand unknown keys is refused in
// termsafe.MaxErrors of them and a count; UnmarshalOpen still finds the one
// miscased key among the unknown keys it lets pass, however late it comes.
func TestUnmarshalBounded(t *testing.T) {
	var in strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&in, "junk%d: 1\n", i)
	}
	err := Unmarshal([]byte(in.String()), &doc{})
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != termsafe.MaxErrors+1 || len(FieldErrors(err)) != termsafe.MaxErrors ||
		!strings.HasPrefix(lines[termsafe.MaxErrors], "and ") || !strings.HasSuffix(lines[termsafe.MaxErrors], " more not shown (100 in all)") {
		t.Errorf("a thousand unknown keys: %d lines, last %q", len(lines), lines[len(lines)-1])
	}
	var open strings.Builder
	for i := range 50 {
		fmt.Fprintf(&open, "extra%d: 1\n", i)
	}
	open.WriteString("Kind: K\n")
	if err := UnmarshalOpen([]byte(open.String()), &doc{}); err == nil || !strings.Contains(err.Error(), `unknown field "Kind"`) {
		t.Errorf("the miscased key after 50 others: %v", err)
	}
}

// TestLongKeyIsCut: an unknown key of 1 MB is named in a short error, cut
// with the count of the bytes left out.
func TestLongKeyIsCut(t *testing.T) {
	long := strings.Repeat("k", 1<<20)
	err := Unmarshal([]byte("kind: K\n? "+long+"\n: 1\n"), &doc{})
	if err == nil || len(err.Error()) > 1024 || !strings.HasPrefix(err.Error(), `unknown field "kkk`) || !strings.HasSuffix(err.Error(), `"... (1048320 more bytes)`) {
		t.Errorf("a 1 MB unknown key: %d bytes: %.400v", len(fmt.Sprint(err)), err)
	}
	if fe := FieldErrors(err); len(fe) != 1 || fe[0].Path != long {
		t.Errorf("the FieldError keeps the whole path: %d", len(fe))
	}
}
