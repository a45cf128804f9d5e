package ovngatewaytest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	ovsdbServerBin = "ovsdb-server"
	ovsdbToolBin   = "ovsdb-tool"
	startTimeout   = 15 * time.Second
)

// sbinDir is where Debian installs ovsdb-server, often outside a user's PATH.
var sbinDir = "/usr/sbin"

// ErrMissingOVSDB says the real ovsdb-server or ovsdb-tool is not installed.
var ErrMissingOVSDB = errors.New("ovsdb-server and ovsdb-tool are required: run hack/test.sh, which installs them, or `apt-get install ovn-central`")

// Real is an ovsdb-server process serving a standalone OVN_Northbound
// database created with ovsdb-tool from the schema under test. Everything it
// writes (database, sockets, pid file, log) stays in its directory.
type Real struct {
	dir     string
	args    []string
	unix    string
	sslAddr string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// RealOption configures StartReal.
type RealOption func(*realConfig) error

type realConfig struct {
	ssl *sslFiles
}

type sslFiles struct{ key, cert, ca []byte }

// WithSSL makes the server also listen on ssl:127.0.0.1:<free port> with the
// given PEM private key, certificate and CA certificate (the CA that client
// certificates must chain to).
func WithSSL(keyPEM, certPEM, caPEM []byte) RealOption {
	return func(c *realConfig) error {
		c.ssl = &sslFiles{key: keyPEM, cert: certPEM, ca: caPEM}
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
	if err := lookBinaries(); err != nil {
		return nil, err
	}
	s := &Real{dir: dir, unix: filepath.Join(dir, "nb.sock")}
	if err := s.createDB(); err != nil {
		return nil, err
	}
	s.args = []string{
		"--remote=punix:" + s.unix,
		"--unixctl=" + filepath.Join(dir, "ctl"),
		"--pidfile=" + filepath.Join(dir, "pid"),
		"--log-file=" + filepath.Join(dir, "log"),
	}
	if cfg.ssl != nil {
		ssl, err := s.sslArgs(cfg.ssl)
		if err != nil {
			return nil, err
		}
		s.args = append(s.args, ssl...)
	}
	s.args = append(s.args, filepath.Join(dir, "nb.db"))
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

func lookBinaries() error {
	for _, bin := range []string{ovsdbServerBin, ovsdbToolBin} {
		if _, err := exec.LookPath(bin); err != nil {
			if _, err := os.Stat(filepath.Join(sbinDir, bin)); err == nil {
				continue
			}
			return fmt.Errorf("%s not found: %w", bin, ErrMissingOVSDB)
		}
	}
	return nil
}

func binary(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return filepath.Join(sbinDir, name)
}

func (s *Real) createDB() error {
	schema := filepath.Join(s.dir, "ovn-nb.ovsschema")
	if err := os.WriteFile(schema, schemaJSON, 0o600); err != nil {
		return fmt.Errorf("cannot write the NB schema: %w", err)
	}
	out, err := exec.Command(binary(ovsdbToolBin), "create", filepath.Join(s.dir, "nb.db"), schema).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cannot create the NB database: %w: %s", err, out)
	}
	return nil
}

func (s *Real) sslArgs(f *sslFiles) ([]string, error) {
	files := map[string][]byte{"key.pem": f.key, "cert.pem": f.cert, "ca.pem": f.ca}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(s.dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("cannot write %s: %w", name, err)
		}
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	s.sslAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return []string{
		fmt.Sprintf("--remote=pssl:%d:127.0.0.1", port),
		"--private-key=" + filepath.Join(s.dir, "key.pem"),
		"--certificate=" + filepath.Join(s.dir, "cert.pem"),
		"--ca-cert=" + filepath.Join(s.dir, "ca.pem"),
	}, nil
}

// FreePort returns a TCP port of 127.0.0.1 that nothing listens on now.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("cannot find a free TCP port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (s *Real) start() error {
	cmd := exec.Command(binary(ovsdbServerBin), s.args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot run ovsdb-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	return s.waitListening()
}

func (s *Real) waitListening() error {
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("ovsdb-server exited at start: %s", s.logTail())
		default:
		}
		if s.listening() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ovsdb-server did not listen within %s: %s", startTimeout, s.logTail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *Real) listening() bool {
	c, err := net.Dial("unix", s.unix)
	if err != nil {
		return false
	}
	_ = c.Close()
	if s.sslAddr == "" {
		return true
	}
	c, err = net.Dial("tcp", s.sslAddr)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

func (s *Real) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "log"))
	if err != nil {
		return "no log: " + err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}

// Endpoint is the unix connection string: "unix:<dir>/nb.sock".
func (s *Real) Endpoint() string { return "unix:" + s.unix }

// SSLEndpoint is "ssl:127.0.0.1:<port>" when started WithSSL, else "".
func (s *Real) SSLEndpoint() string {
	if s.sslAddr == "" {
		return ""
	}
	return "ssl:" + s.sslAddr
}

// Dir is the directory holding the database, sockets, pid file and log.
func (s *Real) Dir() string { return s.dir }

// Running reports whether the process is alive.
func (s *Real) Running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL, as a crash would, and waits for the process to end.
func (s *Real) Kill() {
	s.signal(syscall.SIGKILL)
}

// Stop ends the process with SIGTERM (SIGKILL after 5s); StartReal registers
// it for cleanup.
func (s *Real) Stop() {
	if !s.Running() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		s.Kill()
	}
}

func (s *Real) signal(sig syscall.Signal) {
	if !s.Running() {
		return
	}
	_ = s.cmd.Process.Signal(sig)
	<-s.exited
}

// Restart starts ovsdb-server again on the same database, sockets and port
// after Kill or Stop, and waits until it listens.
func (s *Real) Restart() error {
	if s.Running() {
		return errors.New("cannot restart ovsdb-server: it is still running")
	}
	return s.start()
}
