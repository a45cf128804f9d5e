package testproc_test

import (
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/testproc"
)

// schema is the smallest database ovsdb-server serves.
const schema = `{"name": "Test", "version": "1.0.0", "tables": {"T": {"columns": {"name": {"type": "string"}}}}}`

// TestOVSDB: ovsdb-server serves a database created from a schema on a
// unix socket and a TCP port, and comes back on the same ones after a
// crash.
func TestOVSDB(t *testing.T) {
	s, err := testproc.StartOVSDB(testproc.OVSDBOptions{Name: "the test ovsdb-server", Dir: t.TempDir(), File: "test",
		SchemaJSON: []byte(schema), Unix: true, TCP: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	if !strings.HasPrefix(s.UnixEndpoint(), "unix:") || !strings.HasPrefix(s.TCPEndpoint(), "tcp:127.0.0.1:") || s.SSLEndpoint() != "" {
		t.Errorf("endpoints %q %q %q", s.UnixEndpoint(), s.TCPEndpoint(), s.SSLEndpoint())
	}
	port := s.Port
	s.Kill()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if s.Port != port {
		t.Errorf("restarted on port %d, want %d", s.Port, port)
	}
	if _, err := testproc.StartOVSDB(testproc.OVSDBOptions{Name: "a server on a bad schema", Dir: t.TempDir(), File: "bad",
		SchemaJSON: []byte("{")}); err == nil || !strings.Contains(err.Error(), "cannot create the database of a server on a bad schema") {
		t.Errorf("a bad schema: %v", err)
	}
}
