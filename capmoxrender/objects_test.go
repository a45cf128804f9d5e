package capmoxrender_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// TestReadObjectsEveryDocument: every document of a lookup stream is read,
// empty ones passed over; an object after a document end marker, a syntax
// error or a key given twice in a later document is refused, naming the
// document and its line in the file.
func TestReadObjectsEveryDocument(t *testing.T) {
	cluster := func(name string) string {
		return "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: " + name + ", namespace: n}\n"
	}
	o, err := capmoxrender.ReadObjectsBytes([]byte("---\n---\n" + cluster("a") + "---\n# none\n---\n" + cluster("b")))
	if err != nil || len(o.Items()) != 2 || o.Items()[1].GetName() != "b" {
		t.Fatalf("two Clusters among empty documents: %v, %v", o, err)
	}
	cases := map[string]struct{ in, want string }{
		"AfterEnd":       {cluster("a") + "...\n" + cluster("b"), "document 2: yaml: line 4: did not find expected <document start>"},
		"SyntaxInSecond": {cluster("a") + "---\n" + cluster("b") + "  spec: [\n", "document 2: yaml: line 7: did not find expected key"},
		"DuplicateKey": {cluster("a") + "---\n" + cluster("b") + "kind: Other\n", `document 2: yaml: unmarshal errors:
  line 8: key "kind" already set in map`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := capmoxrender.ReadObjectsBytes([]byte(tc.in))
			if !errors.Is(err, capmoxrender.ErrInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadObjectsBytes = %v, %v; want an invalid-input error containing %q", o, err, tc.want)
			}
		})
	}
}
