package ovngatewaytest

import (
	"os"
	"path/filepath"
	"testing"
)

// maxSocketDir keeps "<dir>/<name>.sock" under the 108-byte limit of a unix
// socket path.
const maxSocketDir = 90

// socketDir returns t.TempDir(), or a shorter temporary directory removed on
// cleanup when a long test name would make socket paths too long.
func socketDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if len(dir) <= maxSocketDir {
		return dir
	}
	short, err := os.MkdirTemp("", "ovnnb")
	if err != nil {
		t.Fatalf("cannot create a directory for unix sockets: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(short) })
	return filepath.Clean(short)
}
