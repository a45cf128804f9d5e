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
	release, err = LockFile(path, timeout)
	if errors.Is(err, errLockTimeout) {
		return nil, fmt.Errorf("port %d is still held by another test's manager after %s (lock %s)", port, timeout, path)
	}
	return release, err
}

// errLockTimeout says LockFile gave up waiting.
var errLockTimeout = errors.New("lock still held")

// LockFile takes the machine's lock of the file path (flock(2), created
// when missing), waiting up to timeout while another process or another
// caller holds it, and returns its release. The kernel drops the lock when
// the holding process ends, however it ends, and a child process does not
// inherit it (Go opens files close-on-exec): tests lock a fixed resource
// of the machine, such as a port or a folder a binary cannot be told, for
// as long as a process they started uses it.
func LockFile(path string, timeout time.Duration) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open the lock %s: %w", path, err)
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
			return nil, fmt.Errorf("%w after %s: %s", errLockTimeout, timeout, path)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
