//go:build linux

package ovnlab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/testproc"
)

// TestDaemonFailedStart: a daemon that exits at start is named in the error
// together with the tail of its log.
func TestDaemonFailedStart(t *testing.T) {
	if err := Check(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path, err := testproc.Find("ovsdb-server")
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "db.log")
	d := &testproc.Process{
		Name: "ovsdb-server of chassis chX", Logs: []string{log}, Output: filepath.Join(dir, "db.out"), Dir: dir, Path: path,
		Args:  []string{filepath.Join(dir, "missing.db"), "--log-file=" + log},
		Ready: func() error { return os.ErrNotExist },
	}
	err = d.Start()
	if err == nil {
		_ = d.Stop()
		t.Fatal("ovsdb-server on a missing database must fail to start")
	}
	for _, want := range []string{"ovsdb-server of chassis chX (pid ", "exited at start", "missing.db"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if d.Running() {
		t.Error("the failed daemon still runs")
	}
}

// TestCheckNamesPackages: a missing program is reported with the Debian
// package to install.
func TestCheckNamesPackages(t *testing.T) {
	saved := requirements
	t.Cleanup(func() { requirements = saved })
	requirements = append(requirements[:0:0], requirements...)
	requirements = append(requirements, struct{ file, pkg string }{"ovnlab-no-such-program", "ovnlab-no-such-package"})
	err := Check()
	if err == nil || !strings.Contains(err.Error(), "ovnlab-no-such-program") || !strings.Contains(err.Error(), "apt-get install ovnlab-no-such-package") {
		t.Fatalf("Check() = %v, want the program and `apt-get install ovnlab-no-such-package`", err)
	}
}
