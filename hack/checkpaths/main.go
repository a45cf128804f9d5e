// Command checkpaths fails when a tracked file of the repository refers to a
// path outside the repository: a relative path that climbs above the
// repository root from the file's own folder, or a name of the development
// machines' reference folder. A clone placed anywhere has nothing beside it,
// so such a reference works only where it was written.
//
//	go run ./hack/checkpaths     lists each reference as file:line and exits 1
//
// It reads the files `git ls-files` lists, from the repository root.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"
)

// relative matches a path that starts by climbing: ../x, ../../x.
var relative = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.\-/])((?:\.\./)+[A-Za-z0-9_.\-/]*)`)

// outside matches names that only the development machines have.
var outside = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.\-])(` + retiredVar + `|/work/|shared/(?:crds|design|tools|hooks)\b)`)

// retiredVar is the environment variable that once pointed the tests at the
// reference folder; it is spelt in two halves so that this file does not
// carry the name it forbids.
const retiredVar = "PXSUBSTRATE_" + "SHARED"

// Finding is one reference to a path outside the repository.
type Finding struct {
	File string
	Line int
	Ref  string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s refers to a path outside the repository", f.File, f.Line, f.Ref)
}

// Check returns the references in the file named name (a path relative to
// the repository root, with forward slashes) whose content r holds.
func Check(name string, r io.Reader) ([]Finding, error) {
	var out []Finding
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	dir := path.Dir(name)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		for _, m := range relative.FindAllStringSubmatch(line, -1) {
			if escapes(dir, m[1]) {
				out = append(out, Finding{File: name, Line: n, Ref: m[1]})
			}
		}
		for _, m := range outside.FindAllStringSubmatch(line, -1) {
			out = append(out, Finding{File: name, Line: n, Ref: m[1]})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// escapes says whether ref, relative to dir, names something above the root.
func escapes(dir, ref string) bool {
	joined := path.Join(dir, ref)
	return joined == ".." || strings.HasPrefix(joined, "../")
}

// binary says whether data looks like a binary file (a NUL in its first 8 KiB).
func binary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0
}

// self is this command's own folder: its patterns and test cases spell the
// very references it looks for.
const self = "hack/checkpaths/"

func run(stdout, stderr io.Writer) int {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		fmt.Fprintf(stderr, "checkpaths: run it inside the repository: git rev-parse: %v\n", err)
		return 2
	}
	root := strings.TrimSpace(string(top))
	ls := exec.Command("git", "ls-files", "-z")
	ls.Dir = root
	names, err := ls.Output()
	if err != nil {
		fmt.Fprintf(stderr, "checkpaths: git ls-files: %v\n", err)
		return 2
	}
	var found []Finding
	for _, name := range strings.Split(strings.TrimRight(string(names), "\x00"), "\x00") {
		if name == "" || strings.HasPrefix(name, self) {
			continue
		}
		data, err := os.ReadFile(path.Join(root, name))
		if err != nil {
			if os.IsNotExist(err) { // deleted in the work tree, not yet committed
				continue
			}
			fmt.Fprintf(stderr, "checkpaths: %v\n", err)
			return 2
		}
		if binary(data) {
			continue
		}
		fs, err := Check(name, bytes.NewReader(data))
		if err != nil {
			fmt.Fprintf(stderr, "checkpaths: %v\n", err)
			return 2
		}
		found = append(found, fs...)
	}
	for _, f := range found {
		fmt.Fprintln(stdout, f)
	}
	if len(found) > 0 {
		fmt.Fprintf(stderr, "checkpaths: %d reference(s) to paths outside the repository; a clone has nothing beside it: "+
			"keep what the tests need inside the repository (third_party/, testdata/) and point docs at it\n", len(found))
		return 1
	}
	return 0
}

func main() { os.Exit(run(os.Stdout, os.Stderr)) }
