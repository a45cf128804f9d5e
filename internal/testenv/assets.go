package testenv

import (
	"fmt"
	"os"
	"path/filepath"
)

// Assets is a folder of binaries a hack/*-assets.sh script builds into
// the cache folder (CacheRoot), found the one way every environment finds
// its own: the folder a variable names, else the script's default.
type Assets struct {
	// Env is the variable that names the folder, such as
	// PXSUBSTRATE_CAPI_ASSETS; Default the folder when it is unset.
	Env, Default string
	// Missing is the error a missing folder or binary wraps, such as
	// capi.ErrMissingAssets; Hint says what builds them.
	Missing error
	Hint    string
}

// Dir is the folder: $Env when set, else Default.
func (a Assets) Dir() string {
	if dir := os.Getenv(a.Env); dir != "" {
		return dir
	}
	return a.Default
}

// Folder returns Dir when it is a folder, else an error wrapping Missing.
func (a Assets) Folder() (string, error) {
	dir := a.Dir()
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: no folder %s (%s)", a.Missing, dir, a.Hint)
	}
	return dir, nil
}

// Executable returns nil when path is an executable file, else an error
// wrapping Missing that names it.
func (a Assets) Executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%w: no executable %s (%s)", a.Missing, path, a.Hint)
	}
	return nil
}

// Binary returns the path of the executable name in Dir.
func (a Assets) Binary(name string) (string, error) {
	path := filepath.Join(a.Dir(), name)
	return path, a.Executable(path)
}
