package testproc

import (
	"errors"
	"strings"
	"testing"
)

// TestMissingOVSDBServer: without ovsdb-server and ovsdb-tool, StartOVSDB
// fails with ErrMissingOVSDB, which says how to install them.
func TestMissingOVSDBServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	old := sbinDirs
	sbinDirs = []string{t.TempDir()}
	defer func() { sbinDirs = old }()
	_, err := StartOVSDB(OVSDBOptions{Name: "the NB", Dir: t.TempDir(), File: "nb", SchemaJSON: []byte("{}"), Unix: true})
	if !errors.Is(err, ErrMissingOVSDB) {
		t.Fatalf("StartOVSDB without binaries: want ErrMissingOVSDB, got %v", err)
	}
	for _, hint := range []string{"the NB", "hack/test.sh", "apt-get install ovn-central"} {
		if !strings.Contains(err.Error(), hint) {
			t.Errorf("the error must name %q, got %q", hint, err)
		}
	}
}
