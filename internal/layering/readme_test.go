package layering_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// layout returns the folders README.md's "## Layout" block gives a line
// of: the first word of each line that does not start with a space, less
// its trailing slash, with the line number.
func layout(t *testing.T, readme string) map[string]int {
	t.Helper()
	f, err := os.Open(readme)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries := map[string]int{}
	section, block := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == "## Layout"
		case section && strings.HasPrefix(line, "```"):
			block = !block
		case section && block && line != "" && line[0] != ' ':
			entries[strings.TrimSuffix(strings.Fields(line)[0], "/")] = n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatalf("%s has no text block under ## Layout", readme)
	}
	return entries
}

// trackedFolders returns the tracked top-level folders and the tracked
// folders of internal/ of the checkout at root.
func trackedFolders(t *testing.T, root string) (top, internal []string) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %s", stderr(err))
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		parts := strings.Split(name, "/")
		if len(parts) > 1 && !slices.Contains(top, parts[0]) {
			top = append(top, parts[0])
		}
		if len(parts) > 2 && parts[0] == "internal" && !slices.Contains(internal, "internal/"+parts[1]) {
			internal = append(internal, "internal/"+parts[1])
		}
	}
	return top, internal
}

// TestReadmeLayout: README.md's layout list gives every tracked top-level
// folder a line (or a line for each of its folders), and every folder of
// internal/ its own line; every folder it lists exists.
func TestReadmeLayout(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	entries := layout(t, filepath.Join(root, "README.md"))
	top, internal := trackedFolders(t, root)
	for _, dir := range top {
		listed := false
		for e := range entries {
			listed = listed || e == dir || strings.HasPrefix(e, dir+"/")
		}
		if !listed {
			t.Errorf("README.md's layout list has no line for the top-level folder %s/: add one saying what it holds", dir)
		}
	}
	for _, dir := range internal {
		if _, ok := entries[dir]; !ok {
			t.Errorf("README.md's layout list has no line for %s/: add one saying what it holds", dir)
		}
	}
	for e, line := range entries {
		if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(e))); err != nil || !fi.IsDir() {
			t.Errorf("README.md:%d: the layout list names %s/, which is not a folder of the checkout", line, e)
		}
	}
}
