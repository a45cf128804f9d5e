// Package capread reads a file or a stream whole, up to a bound. Every
// input the module reads from a file a user names, from standard input or
// from a peer is read through it, or through a reader bounded the same way
// (pveapi caps the Proxmox VE API's answers, admission its requests), so
// that no input, /dev/zero included, grows without end in memory.
package capread

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge is matched by every *TooLargeError.
var ErrTooLarge = errors.New("input larger than its bound")

// TooLargeError refuses an input of more than Limit bytes.
type TooLargeError struct {
	// Name is how the message names the input: a path, "standard input".
	Name  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %s", e.Name, Size(e.Limit))
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// All reads r to its end, or refuses it with a *TooLargeError naming name
// once it passes limit bytes; it never reads more than limit+1 bytes.
func All(r io.Reader, limit int64, name string) ([]byte, error) {
	data, err := read(r, limit, name)
	if err != nil && !errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("cannot read %s: %w", name, err)
	}
	return data, err
}

// File reads the file at path as All reads a stream, naming it by path.
// Its errors are the *os.PathError of the open or the read (errors.Is
// os.ErrNotExist holds for a missing file) or a *TooLargeError.
func File(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, limit, path)
}

func read(r io.Reader, limit int64, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Name: name, Limit: limit}
	}
	return data, nil
}

// Size words a byte count for a message: 16 MiB, 64 KiB, 1000 bytes.
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
