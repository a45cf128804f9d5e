package network_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReasonsTable parses the reasons table of docs/api.md and checks it
// against the code and the peer: its first column is exactly the condition
// reasons the code declares (the Reason constants of api/v1alpha1, of this
// package and engine's Ready and Pending), its second exactly the peer's
// reasons recorded in testdata/peer-reasons.txt, and a row that names both
// spells them alike, so a reason the peer has is the peer's.
func TestReasonsTable(t *testing.T) {
	ours, peers := readReasonsTable(t, filepath.Join("..", "docs", "api.md"))
	code := reasonConstants(t, filepath.Join("..", "api", "v1alpha1", "constants.go"), filepath.Join("..", "engine", "conditions.go"))
	code = append(code, reasonConstants(t, nonTestFiles(t, ".")...)...)
	if diff := cmp.Diff(sortedSet(code), sortedSet(column(ours))); diff != "" {
		t.Errorf("the table's first column against the code's reasons (-code +table):\n%s", diff)
	}
	if diff := cmp.Diff(sortedSet(peerReasons(t)), sortedSet(column(peers))); diff != "" {
		t.Errorf("the table's second column against the peer's reasons (-peer +table):\n%s", diff)
	}
	for i := range ours {
		if ours[i] != "" && peers[i] != "" && ours[i] != peers[i] {
			t.Errorf("row %d spells the peer's %s as %s", i+1, peers[i], ours[i])
		}
	}
	for _, col := range [][]string{column(ours), column(peers)} {
		if len(sortedSet(col)) != len(col) {
			t.Errorf("a reason is listed twice: %v", col)
		}
	}
}

// readReasonsTable returns the two reason columns of the table under
// "### Condition reasons", "" where a row has `—`.
func readReasonsTable(t *testing.T, path string) (ours, peers []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "### Condition reasons":
			in = true
		case in && strings.HasPrefix(line, "#"):
			in = false
		case in && strings.HasPrefix(line, "| `") || in && strings.HasPrefix(line, "| —"):
			cells := strings.Split(line, "|")
			ours, peers = append(ours, cell(cells[1])), append(peers, cell(cells[2]))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ours) < 20 {
		t.Fatalf("%s: %d rows in the reasons table; the reader is broken", path, len(ours))
	}
	return ours, peers
}

func cell(s string) string {
	s = strings.TrimSpace(s)
	if s == "—" {
		return ""
	}
	return strings.Trim(s, "`")
}

// reasonConstants returns the values of the string constants named
// Reason... in the Go files.
func reasonConstants(t *testing.T, files ...string) []string {
	t.Helper()
	var out []string
	for _, file := range files {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				v := spec.(*ast.ValueSpec)
				for i, name := range v.Names {
					if !strings.HasPrefix(name.Name, "Reason") || i >= len(v.Values) {
						continue
					}
					if lit, ok := v.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, err := strconv.Unquote(lit.Value)
						if err != nil {
							t.Fatal(err)
						}
						out = append(out, s)
					}
				}
			}
		}
	}
	return out
}

func nonTestFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
}

func peerReasons(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "peer-reasons.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

func column(c []string) []string {
	return slices.DeleteFunc(slices.Clone(c), func(s string) bool { return s == "" })
}

func sortedSet(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
