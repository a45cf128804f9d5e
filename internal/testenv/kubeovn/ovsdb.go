package kubeovn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"

	"github.com/pxsubstrate/pxsubstrate/testproc"
)

// DB is a standalone ovsdb-server serving one OVN database, created by
// ovsdb-tool from the schema Kube-OVN's own libovsdb model was generated
// from (the version its images' OVN serves), with the global row that
// ovn-ctl's `ovn-nbctl init` / `ovn-sbctl init` creates.
type DB struct {
	// Name is the database (OVN_Northbound or OVN_Southbound).
	Name string
	// Addr is the TCP endpoint on 127.0.0.1 (tcp:127.0.0.1:port), the form
	// Kube-OVN's start-controller.sh gives kube-ovn-controller.
	Addr string
	// Unix is the endpoint of its unix socket (unix:path).
	Unix string
	proc *testproc.OVSDB
}

// database describes one of the two OVN databases.
type database struct {
	name, file, model, global string
}

var (
	northbound = database{name: "OVN_Northbound", file: "nb", model: "pkg/ovsdb/ovnnb/model.go", global: "NB_Global"}
	southbound = database{name: "OVN_Southbound", file: "sb", model: "pkg/ovsdb/ovnsb/model.go", global: "SB_Global"}
)

// schemaLiteral is the generated model's embedded schema.
var schemaLiteral = regexp.MustCompile("(?s)var schema = `(\\{.*?\\})`")

// moduleSchema returns the schema embedded in the Kube-OVN module's model
// file of d, without the minimum string lengths its generator made up.
func moduleSchema(moduleDir string, d database) ([]byte, error) {
	file := filepath.Join(moduleDir, d.model)
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	m := schemaLiteral.FindSubmatch(src)
	if m == nil {
		return nil, fmt.Errorf("%s holds no embedded schema", file)
	}
	schema, err := withoutMinLengths(m[1])
	if err != nil {
		return nil, fmt.Errorf("the schema embedded in %s: %w", file, err)
	}
	return schema, nil
}

// withoutMinLengths drops every "minLength" of a schema written by
// libovsdb's model generator. Its round trip through libovsdb's BaseType
// (ovsdb/schema.go: UnmarshalJSON sets minLength from maxLength, and
// MarshalJSON writes maxLength as minLength) turns OVN's
// {"maxLength": 63} of ACL.name into {"minLength": 63, "maxLength": 63}:
// an ovsdb-server serving that refuses every ACL name shorter than 63
// characters ("constraint violation: ... is less than minimum allowed
// length 63"), such as the subnet name Kube-OVN gives a private subnet's
// ACLs (ovs.OVNNbClient.SetLogicalSwitchPrivate). A minLength there is
// never OVN's own, and OVN's schemas have none.
func withoutMinLengths(schema []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber() // integer bounds stay integers
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var drop func(any)
	drop = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			delete(v, "minLength")
			for _, e := range v {
				drop(e)
			}
		case []any:
			for _, e := range v {
				drop(e)
			}
		}
	}
	drop(v)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// startDB creates d in dir with schema, starts ovsdb-server on it and
// inserts the database's global row.
func startDB(dir string, d database, schema []byte) (*DB, error) {
	client, err := testproc.Find("ovsdb-client")
	if err != nil {
		return nil, fmt.Errorf("ovsdb-client not found: run hack/test.sh, which installs ovn-central, or `apt-get install ovn-central`")
	}
	s, err := testproc.StartOVSDB(testproc.OVSDBOptions{Name: "ovsdb-server (" + d.name + ")", Dir: dir, File: d.file,
		SchemaJSON: schema, Unix: true, TCP: true})
	if err != nil {
		return nil, err
	}
	db := &DB{Name: d.name, Addr: s.TCPEndpoint(), Unix: s.UnixEndpoint(), proc: s}
	insert := fmt.Sprintf(`[%q,{"op":"insert","table":%q,"row":{}}]`, d.name, d.global)
	if out, err := exec.Command(client, "transact", db.Unix, insert).CombinedOutput(); err != nil {
		return nil, errors.Join(fmt.Errorf("cannot insert the %s row: %w: %s", d.global, err, out), s.Stop())
	}
	return db, nil
}

// Stop stops the server by its process id.
func (db *DB) Stop() error { return db.proc.Stop() }

// Commits counts the write transactions the server has committed to its
// database file since it created it: a standalone ovsdb-server appends one
// record to the file for each transaction that changed something (and
// rewrites the file when it compacts it, which makes the count drop).
func (db *DB) Commits() (int, error) {
	data, err := os.ReadFile(db.proc.DB)
	if err != nil {
		return 0, err
	}
	// The first record is the schema.
	return bytes.Count(data, []byte("OVSDB JSON ")) - 1, nil
}
