package ovngatewaytest

import (
	"errors"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/testproc"
)

// ErrMissingOVSDB says the real ovsdb-server or ovsdb-tool is not installed.
var ErrMissingOVSDB = testproc.ErrMissingOVSDB

// Real is an ovsdb-server process serving a standalone OVN_Northbound
// database created with ovsdb-tool from the schema under test. Everything it
// writes (database, sockets, pid file, log) stays in its directory.
type Real struct {
	dir   string
	ovsdb *testproc.OVSDB
}

// RealOption configures StartReal.
type RealOption func(*realConfig) error

type realConfig struct {
	ssl *testproc.SSL
}

// WithSSL makes the server also listen on ssl:127.0.0.1:<free port> with the
// given PEM private key, certificate and CA certificate (the CA that client
// certificates must chain to).
func WithSSL(keyPEM, certPEM, caPEM []byte) RealOption {
	return func(c *realConfig) error {
		c.ssl = &testproc.SSL{Key: keyPEM, Cert: certPEM, CA: caPEM}
		return nil
	}
}

// StartReal creates a database in a temporary directory of t, starts
// ovsdb-server on it and stops the process on cleanup. It fails t with
// ErrMissingOVSDB when the binaries are not installed.
func StartReal(t testing.TB, opts ...RealOption) *Real {
	t.Helper()
	s, err := startReal(socketDir(t), opts...)
	if err != nil {
		t.Fatalf("cannot start ovsdb-server: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

func startReal(dir string, opts ...RealOption) (*Real, error) {
	var cfg realConfig
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	s, err := testproc.StartOVSDB(testproc.OVSDBOptions{Name: "ovsdb-server (OVN_Northbound)", Dir: dir, File: "nb",
		SchemaJSON: schemaJSON, Unix: true, SSL: cfg.ssl})
	if err != nil {
		return nil, err
	}
	return &Real{dir: dir, ovsdb: s}, nil
}

// FreePort returns a TCP port of 127.0.0.1 that nothing listens on now.
func FreePort() (int, error) { return testproc.FreePort() }

// Endpoint is the unix connection string: "unix:<dir>/nb.sock".
func (s *Real) Endpoint() string { return s.ovsdb.UnixEndpoint() }

// SSLEndpoint is "ssl:127.0.0.1:<port>" when started WithSSL, else "".
func (s *Real) SSLEndpoint() string { return s.ovsdb.SSLEndpoint() }

// Dir is the directory holding the database, sockets, pid file and log.
func (s *Real) Dir() string { return s.dir }

// Running reports whether the process is alive.
func (s *Real) Running() bool { return s.ovsdb.Running() }

// Kill sends SIGKILL, as a crash would, and waits for the process to end.
func (s *Real) Kill() { s.ovsdb.Kill() }

// Stop ends the process with SIGTERM (SIGKILL after 5s); StartReal registers
// it for cleanup. A server a test killed, or that crashed, is stopped
// without a word: the test that needed it has failed already.
func (s *Real) Stop() { _ = s.ovsdb.Stop() }

// Restart starts ovsdb-server again on the same database, sockets and port
// after Kill or Stop, and waits until it listens.
func (s *Real) Restart() error {
	if s.Running() {
		return errors.New("cannot restart ovsdb-server: it is still running")
	}
	return s.ovsdb.Start()
}
