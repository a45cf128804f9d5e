package capi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// portLockTimeout bounds the wait for a fixed port another manager holds:
// a whole capmox test of another package fits in it on a busy machine.
const portLockTimeout = 15 * time.Minute

// lockPort takes the machine's lock of a fixed port, waiting while another
// manager (of this test binary or of another one) holds it, and returns
// its release. The lock is flock(2) on a file of the temporary folder, so
// the kernel drops it when the holding process ends, however it ends; a
// manager does not inherit it (Go opens files close-on-exec).
func lockPort(port int, timeout time.Duration) (release func(), err error) {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("pxsubstrate-webhook-port-%d.lock", port))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open the lock of port %d: %w", port, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("cannot lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("port %d is still held by another test's manager after %s (lock %s)", port, timeout, path)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
