package testproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// OVSDBOptions says which database an ovsdb-server serves and where.
type OVSDBOptions struct {
	// Name says which server this is in errors ("the OVN northbound
	// ovsdb-server").
	Name string
	// Dir holds its files, named after File: the database File.db, the
	// unixctl socket File.ctl, the pid file File.pid, the log File.log and
	// the clients' socket File.sock.
	Dir, File string
	// Schema is the schema file the database is created from (ovsdb-tool
	// create), or SchemaJSON the schema itself, written to
	// File.ovsschema first. Created says instead that the database exists
	// (a RAFT member's, made with ovsdb-tool create-cluster or
	// join-cluster): nothing is created.
	Schema     string
	SchemaJSON []byte
	Created    bool
	// Unix serves clients on the unix socket File.sock; TCP on a port of
	// 127.0.0.1, Port or a free one when Port is 0; SSL, when set, on a
	// free port of 127.0.0.1 with its certificates.
	Unix bool
	TCP  bool
	Port int
	SSL  *SSL
	// Ready, when set, is what the server must also pass before it counts
	// as started, beyond accepting connections (a RAFT member's cluster
	// status).
	Ready func() error
	// Env is added to the test process's environment.
	Env []string
}

// SSL is what an ovsdb-server's pssl: remote serves with: its PEM private
// key and certificate, and the CA that client certificates must chain to.
type SSL struct{ Key, Cert, CA []byte }

// OVSDB is a running ovsdb-server; its Process stops, kills and restarts
// it (on the same files and ports).
type OVSDB struct {
	Process
	// DB is the database file.
	DB string
	// Socket is the clients' unix socket, "" when not served; Port the
	// TCP port and SSLPort the SSL port of 127.0.0.1, 0 when not served.
	Socket        string
	Port, SSLPort int
}

// ErrMissingOVSDB says ovsdb-server or ovsdb-tool is not installed.
var ErrMissingOVSDB = errors.New("ovsdb-server and ovsdb-tool are required: run hack/test.sh, which installs them, or `apt-get install ovn-central`")

// StartOVSDB creates the database (unless o.Created), starts ovsdb-server
// on it and waits until it accepts connections on every endpoint it
// serves and passes o.Ready.
func StartOVSDB(o OVSDBOptions) (*OVSDB, error) {
	server, err := Find("ovsdb-server")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Name, ErrMissingOVSDB)
	}
	path := func(ext string) string { return filepath.Join(o.Dir, o.File+ext) }
	s := &OVSDB{DB: path(".db")}
	if !o.Created {
		if err := create(o, s.DB); err != nil {
			return nil, err
		}
	}
	args := []string{s.DB, "--unixctl=" + path(".ctl"), "--pidfile=" + path(".pid"), "--log-file=" + path(".log")}
	if o.Unix {
		s.Socket = path(".sock")
		args = append(args, "--remote=punix:"+s.Socket)
	}
	if o.TCP {
		if s.Port = o.Port; s.Port == 0 {
			if s.Port, err = FreePort(); err != nil {
				return nil, err
			}
		}
		args = append(args, "--remote=ptcp:"+strconv.Itoa(s.Port)+":127.0.0.1")
	}
	if o.SSL != nil {
		ssl, err := s.sslArgs(o, *o.SSL)
		if err != nil {
			return nil, err
		}
		args = append(args, ssl...)
	}
	env := []string(nil)
	if len(o.Env) > 0 {
		env = append(os.Environ(), o.Env...)
	}
	s.Process = Process{Name: o.Name, Path: server, Args: args, Dir: o.Dir, Env: env, Output: path(".out"),
		Logs: []string{path(".log")}, Ready: func() error { return s.ready(o.Ready) }}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// create makes the database file from the schema.
func create(o OVSDBOptions, db string) error {
	tool, err := Find("ovsdb-tool")
	if err != nil {
		return fmt.Errorf("%s: %w", o.Name, ErrMissingOVSDB)
	}
	schema := o.Schema
	if o.SchemaJSON != nil {
		schema = filepath.Join(o.Dir, o.File+".ovsschema")
		if err := os.WriteFile(schema, o.SchemaJSON, 0o600); err != nil {
			return fmt.Errorf("cannot write the schema of %s: %w", o.Name, err)
		}
	}
	if out, err := exec.Command(tool, "create", db, schema).CombinedOutput(); err != nil {
		return fmt.Errorf("cannot create the database of %s: %w: %s", o.Name, err, out)
	}
	return nil
}

func (s *OVSDB) sslArgs(o OVSDBOptions, f SSL) ([]string, error) {
	files := map[string][]byte{"key.pem": f.Key, "cert.pem": f.Cert, "ca.pem": f.CA}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(o.Dir, o.File+"-"+name), data, 0o600); err != nil {
			return nil, fmt.Errorf("cannot write %s of %s: %w", name, o.Name, err)
		}
	}
	var err error
	if s.SSLPort, err = FreePort(); err != nil {
		return nil, err
	}
	return []string{
		fmt.Sprintf("--remote=pssl:%d:127.0.0.1", s.SSLPort),
		"--private-key=" + filepath.Join(o.Dir, o.File+"-key.pem"),
		"--certificate=" + filepath.Join(o.Dir, o.File+"-cert.pem"),
		"--ca-cert=" + filepath.Join(o.Dir, o.File+"-ca.pem"),
	}, nil
}

// ready says whether every endpoint accepts connections and more passes.
func (s *OVSDB) ready(more func() error) error {
	if s.Socket != "" {
		if err := dial("unix", s.Socket); err != nil {
			return err
		}
	}
	for _, port := range []int{s.Port, s.SSLPort} {
		if port != 0 {
			if err := dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err != nil {
				return err
			}
		}
	}
	if more != nil {
		return more()
	}
	return nil
}

func dial(network, addr string) error {
	c, err := net.Dial(network, addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// UnixEndpoint is the OVSDB address of the unix socket, "unix:<path>", or
// "" when it is not served.
func (s *OVSDB) UnixEndpoint() string {
	if s.Socket == "" {
		return ""
	}
	return "unix:" + s.Socket
}

// TCPEndpoint is "tcp:127.0.0.1:<port>", or "" when TCP is not served.
func (s *OVSDB) TCPEndpoint() string {
	if s.Port == 0 {
		return ""
	}
	return "tcp:127.0.0.1:" + strconv.Itoa(s.Port)
}

// SSLEndpoint is "ssl:127.0.0.1:<port>", or "" when SSL is not served.
func (s *OVSDB) SSLEndpoint() string {
	if s.SSLPort == 0 {
		return ""
	}
	return "ssl:127.0.0.1:" + strconv.Itoa(s.SSLPort)
}
