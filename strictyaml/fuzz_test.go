package strictyaml

import (
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// FuzzUnmarshal: any input decodes or is refused without a panic, in an
// error of at most termsafe.MaxErrors+1 lines without a control character; a
// refused key is named in the error, never with itself as the suggestion,
// a document admitted once is admitted again, UnmarshalOpen admits
// whatever Unmarshal admits, and neither admits input in which the parser
// reads more than one document with a value, or fails after the first.
func FuzzUnmarshal(f *testing.F) {
	for _, seed := range []string{
		"kind: Plan\ntenants:\n- name: a\n  vmRange: 1-2\n",
		"tenants:\n- Name: a\n",
		"tenants:\n- name: a\n  Name: b\n",
		"storage: a\nstorage: b\n",
		`{"storage":"a","storage":"b"}`,
		"byName:\n  x: {vmrange: 1-2}\n",
		"features: {a: [1, 2.5, x]}\n",
		"tenants: [\n",
		"",
		"~\n",
		`{""}`,
		"- a\n",
		"kind: Plan\n---\nkind: Plan\n",
		"---\n---\nkind: Plan\n",
		"tenants: []\n---\ntenants: [\n",
		"kind: Plan\n...\nkind: Other\n",
		"storage: a\n--- {storage: b}\n",
		" -\n00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d doc
		err := Unmarshal(data, &d)
		for _, fe := range FieldErrors(err) {
			if !strings.Contains(err.Error(), fe.Error()) {
				t.Fatalf("the error of %q leaves out %q: %v", data, fe, err)
			}
			if fe.Suggestion != "" && fe.Suggestion == lastSegment(fe.Path) {
				t.Fatalf("suggests the key itself for %q: %v", data, err)
			}
		}
		if err != nil && (strings.Count(err.Error(), "\n") > termsafe.MaxErrors || strings.ContainsFunc(err.Error(), termsafe.IsEscaped)) {
			t.Fatalf("the error of %q floods or carries a control character: %q", data, err)
		}
		var open doc
		openErr := UnmarshalOpen(data, &open)
		if err == nil && openErr != nil {
			t.Fatalf("Unmarshal admits %q and UnmarshalOpen refuses it: %v", data, openErr)
		}
		if values, perr := v2Documents(data); err == nil || openErr == nil {
			held := 0
			for _, v := range values {
				if v != nil {
					held++
				}
			}
			if perr != nil || held > 1 {
				t.Fatalf("admits %q, in which the parser reads %d documents with a value (error %v)", data, held, perr)
			}
		}
		if err != nil {
			return
		}
		var again doc
		if err := Unmarshal(data, &again); err != nil {
			t.Fatalf("admitted %q once and refused it next: %v", data, err)
		}
	})
}

func lastSegment(path string) string {
	segs := splitPath(path)
	if len(segs) == 0 {
		return ""
	}
	return strings.TrimSpace(segs[len(segs)-1])
}
