package network_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// codeBlock is a Go block of a docs page that says which file it shows.
var codeBlock = regexp.MustCompile("(?s)<!-- code: ([^ ]+) -->\n```go\n(.*?)```")

// TestDocsShowTheRealCode checks that every Go block docs/engine.md marks
// with <!-- code: path --> appears in that file as it is, so the page walks
// through the controller as built, not a copy that drifted.
func TestDocsShowTheRealCode(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "docs", "engine.md"))
	if err != nil {
		t.Fatalf("docs/engine.md walks through the network controller: %v", err)
	}
	blocks := codeBlock.FindAllSubmatch(page, -1)
	if len(blocks) < 3 {
		t.Fatalf("docs/engine.md shows %d marked code blocks, want the network reconciler, its pass data and the zone reconciler", len(blocks))
	}
	for _, b := range blocks {
		path, code := string(b[1]), string(b[2])
		src, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(path)))
		if err != nil {
			t.Errorf("docs/engine.md shows code of %s: %v", path, err)
			continue
		}
		if !strings.Contains(string(src), code) {
			first, _, _ := strings.Cut(code, "\n")
			t.Errorf("docs/engine.md shows a block of %s starting %q that is not in the file; copy it again from the source", path, first)
		}
	}
}
