package kubeovn

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// TestKubeOVNSchemaWithoutMadeUpMinLengths pins what moduleSchema undoes: the
// model's embedded NB schema gives ACL.name a minLength of 63 that OVN's
// schema does not have, and the schema the databases are created from has
// none, with the maxLength and the version kept.
func TestKubeOVNSchemaWithoutMadeUpMinLengths(t *testing.T) {
	mod, err := testenv.ModuleDir(testenv.KubeOVNModule)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []database{northbound, southbound} {
		schema, err := moduleSchema(mod, d)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(schema, []byte("minLength")) {
			t.Errorf("%s: the schema still has a minLength", d.name)
		}
		if d != northbound {
			continue
		}
		var s struct {
			Version string
			Tables  map[string]struct {
				Columns map[string]json.RawMessage
			}
		}
		if err := json.Unmarshal(schema, &s); err != nil {
			t.Fatal(err)
		}
		if s.Version != "7.3.0" {
			t.Errorf("NB schema version %q, want 7.3.0", s.Version)
		}
		var name struct {
			Type struct{ Key map[string]any }
		}
		if err := json.Unmarshal(s.Tables["ACL"].Columns["name"], &name); err != nil {
			t.Fatal(err)
		}
		key := name.Type.Key
		if key["maxLength"] != 63.0 || key["minLength"] != nil {
			t.Errorf("ACL.name key type %v, want a string of at most 63 characters", key)
		}
	}
	// The control: the model's own text has the made-up minimum.
	raw, err := os.ReadFile(filepath.Join(mod, northbound.model))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(schemaLiteral.FindSubmatch(raw)[1], []byte(`"minLength": 63`)) {
		t.Error("the model's embedded NB schema no longer gives ACL.name a minLength: withoutMinLengths may be obsolete")
	}
}
