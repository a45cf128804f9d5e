// Command checkpaths fails when a tracked file of the repository refers to a
// path outside the checkout: a relative path that climbs above the
// repository root from the file's own folder, or an absolute path of the
// machine it was written on. A clone placed anywhere has nothing beside it,
// so such a reference works only where it was written.
//
// An absolute path is the machine's when it lies in a home folder
// (/home/<user>, /Users/<user>, C:\Users\<user>, or $HOME) or in a folder
// that holds the checkout, the standard top-level folders of the
// Filesystem Hierarchy Standard (/tmp, /usr, /srv, ...) excepted: a
// checkout in /srv/build/alice/repo makes /srv/build/alice and
// /srv/build/alice/repo the machine's, not /srv.
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
	"slices"
	"strings"
)

// relative matches a path that starts by climbing: ../x, ../../x.
var relative = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.\-/])((?:\.\./)+[A-Za-z0-9_.\-/]*)`)

// absolute matches an absolute path: a slash that starts a token (not the
// path part of a URL, of $VAR/x or of ~/x) and the path characters after it.
var absolute = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.\-/~$:\\])(/[A-Za-z0-9_.\-/@+]+)`)

// homes matches a path in someone's home folder.
var homes = regexp.MustCompile(`^/(?:home|Users)/[^/]+`)

// windowsHome matches a path in a Windows home folder.
var windowsHome = regexp.MustCompile(`(?i)(?:^|[^A-Za-z0-9])([a-z]:\\users\\[^\s"'` + "`" + `]+)`)

// standard are the top-level folders of the Filesystem Hierarchy Standard:
// every Linux machine has them, so they name no machine in particular.
// /root is not among them: it is the root user's home folder.
var standard = map[string]bool{
	"/bin": true, "/boot": true, "/dev": true, "/etc": true, "/home": true, "/lib": true, "/lib64": true,
	"/media": true, "/mnt": true, "/opt": true, "/proc": true, "/run": true, "/sbin": true,
	"/srv": true, "/sys": true, "/tmp": true, "/usr": true, "/var": true,
}

// Rules says which absolute paths are the machine's.
type Rules struct {
	// Machine lists absolute folders (no trailing slash) that a tracked
	// file must not name, nor anything below them.
	Machine []string
}

// NewRules returns the rules of a checkout at root on a machine whose
// home folder is home ("" when unknown): the folders holding the checkout,
// the checkout itself and home, less the standard top-level folders.
func NewRules(root, home string) Rules {
	var r Rules
	for dir := path.Clean(root); path.IsAbs(dir) && dir != "/"; dir = path.Dir(dir) {
		if !standard[dir] {
			r.Machine = append(r.Machine, dir)
		}
	}
	if home = path.Clean(home); path.IsAbs(home) && home != "/" && !standard[home] && !slices.Contains(r.Machine, home) {
		r.Machine = append(r.Machine, home)
	}
	return r
}

// machines says whether p, an absolute path, lies in a home folder or in
// one of r.Machine.
func (r Rules) machines(p string) bool {
	if homes.MatchString(p) {
		return true
	}
	for _, m := range r.Machine {
		if p == m || strings.HasPrefix(p, m+"/") {
			return true
		}
	}
	return false
}

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
func (rs Rules) Check(name string, r io.Reader) ([]Finding, error) {
	var out []Finding
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	dir := path.Dir(name)
	for n := 1; sc.Scan(); n++ {
		for _, ref := range rs.Line(dir, sc.Text()) {
			out = append(out, Finding{File: name, Line: n, Ref: ref})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// Line returns the references to paths outside the checkout in one line of
// a file in folder dir (relative to the root): climbing paths first, then
// absolute ones.
//
// A line that holds none of the text a reference must hold (../ for a
// climbing one, a home folder or one of rs.Machine for an absolute one, a
// backslash for a Windows one) skips that regular expression: most lines
// of the repository skip all three.
func (rs Rules) Line(dir, line string) []string {
	var refs []string
	if strings.Contains(line, "../") {
		for _, m := range relative.FindAllStringSubmatch(line, -1) {
			if escapes(dir, m[1]) {
				refs = append(refs, m[1])
			}
		}
	}
	if rs.mayName(line) {
		for _, m := range absolute.FindAllStringSubmatch(line, -1) {
			if rs.machines(m[1]) {
				refs = append(refs, m[1])
			}
		}
	}
	if strings.IndexByte(line, '\\') >= 0 {
		for _, m := range windowsHome.FindAllStringSubmatch(line, -1) {
			refs = append(refs, m[1])
		}
	}
	return refs
}

// mayName says whether line holds text that a path machines accepts
// starts with: a home folder's parent or one of rs.Machine.
func (rs Rules) mayName(line string) bool {
	if strings.Contains(line, "/home/") || strings.Contains(line, "/Users/") {
		return true
	}
	return slices.ContainsFunc(rs.Machine, func(m string) bool { return strings.Contains(line, m) })
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

// self is this command's own folder: its test cases spell the very
// references it looks for.
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
	home, _ := os.UserHomeDir()
	found, err := checkAll(NewRules(root, home), root, strings.Split(strings.TrimRight(string(names), "\x00"), "\x00"))
	if err != nil {
		fmt.Fprintf(stderr, "checkpaths: %v\n", err)
		return 2
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

// checkAll checks the files names (relative to root), skipping this
// command's own folder, binary files and files deleted in the work tree.
func checkAll(rs Rules, root string, names []string) ([]Finding, error) {
	var found []Finding
	for _, name := range names {
		if name == "" || strings.HasPrefix(name, self) {
			continue
		}
		data, err := os.ReadFile(path.Join(root, name))
		if err != nil {
			if os.IsNotExist(err) { // deleted in the work tree, not yet committed
				continue
			}
			return nil, err
		}
		if binary(data) {
			continue
		}
		fs, err := rs.Check(name, bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		found = append(found, fs...)
	}
	return found, nil
}

func main() { os.Exit(run(os.Stdout, os.Stderr)) }
