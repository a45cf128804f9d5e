package testproc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
)

// sbinDirs are where Debian installs daemons (ovsdb-server, ovs-vswitchd),
// often outside a user's PATH.
var sbinDirs = []string{"/usr/sbin", "/sbin", "/usr/bin"}

// Find returns the path of the program name: name itself when it is an
// absolute path that exists, else the one on PATH, else the one in an sbin
// folder.
func Find(name string) (string, error) {
	if filepath.IsAbs(name) {
		_, err := os.Stat(name)
		return name, err
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range sbinDirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
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
