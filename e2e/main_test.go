package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// binary is the controller built for this run.
var binary string

func TestMain(m *testing.M) {
	// The test's own clients log nothing; the controller processes keep
	// their logs.
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "pxsubstrate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "proxmox-network-controller")
	build := exec.Command("go", "build", "-o", binary, "../cmd/proxmox-network-controller")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "cannot build the controller: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
