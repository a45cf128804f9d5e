package capread

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// endless is /dev/zero as an io.Reader, counting what is read from it.
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	clear(p)
	e.read += int64(len(p))
	return len(p), nil
}

// TestAllBounded: an endless stream is refused once it passes the bound,
// after reading little more than it; a stream of exactly the bound is
// read whole.
func TestAllBounded(t *testing.T) {
	var z endless
	_, err := All(&z, 1<<20, "standard input")
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) || err.Error() != "standard input is larger than 1 MiB" {
		t.Errorf("an endless stream: %v", err)
	}
	if z.read > 2<<20 {
		t.Errorf("read %d bytes of an endless stream under a 1 MiB bound", z.read)
	}
	data, err := All(strings.NewReader(strings.Repeat("x", 1<<20)), 1<<20, "in")
	if err != nil || len(data) != 1<<20 {
		t.Errorf("a stream of exactly the bound: %d bytes, %v", len(data), err)
	}
}

// TestFile: a file over the bound is refused by its path; one under it is
// read; a missing one is an error naming it.
func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, make([]byte, 3000), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := File(path, 2048); err == nil || err.Error() != path+" is larger than 2 KiB" {
		t.Errorf("3000 bytes under 2 KiB: %v", err)
	}
	if data, err := File(path, 4096); err != nil || len(data) != 3000 {
		t.Errorf("3000 bytes under 4 KiB: %d, %v", len(data), err)
	}
	if _, err := File(path+".missing", 10); err == nil || !strings.Contains(err.Error(), path+".missing") {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := File("/dev/zero", 1<<16); !errors.Is(err, ErrTooLarge) {
			t.Errorf("/dev/zero: %v", err)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{16 << 20: "16 MiB", 64 << 10: "64 KiB", 1000: "1000 bytes", 1<<20 + 1: "1048577 bytes"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
