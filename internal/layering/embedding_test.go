package layering_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// block is one fenced block of a Markdown page: its info string ("sh",
// "text", "go embedder/main.go") and its body.
type block struct {
	info, body string
	line       int
}

func fencedBlocks(t *testing.T, path string) []block {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out  []block
		cur  *block
		body strings.Builder
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &block{info: strings.TrimSpace(strings.TrimPrefix(line, "```")), line: n}
			body.Reset()
		case cur != nil && line == "```":
			cur.body = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s:%d: the block never ends", path, cur.line)
	}
	return out
}

// TestEmbeddingDoc runs docs/embedding.md as written: it writes the files
// the page shows (blocks whose info string names a path), runs every sh
// block with bash from a folder holding this checkout as pxsubstrate/, and
// compares each command's output with the text block that follows it. The
// commands use the module proxy as a reader's would: `go mod graph` reads
// the go.mod of every module in the graph, which a fresh module cache
// does not hold after building this module alone.
func TestEmbeddingDoc(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(root, "docs", "embedding.md")
	work := t.TempDir()
	if err := os.Symlink(root, filepath.Join(work, "pxsubstrate")); err != nil {
		t.Fatal(err)
	}
	blocks := fencedBlocks(t, page)
	ran := 0
	for i, b := range blocks {
		lang, path, named := strings.Cut(b.info, " ")
		switch {
		case named:
			dst := filepath.Join(work, filepath.FromSlash(path))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, []byte(b.body), 0o644); err != nil {
				t.Fatal(err)
			}
		case lang == "sh":
			ran++
			cmd := exec.Command("bash", "-euo", "pipefail", "-c", b.body)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "GOWORK=off")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("docs/embedding.md:%d: %s\n%v", b.line, b.body, stderr(err))
			}
			if i+1 < len(blocks) && blocks[i+1].info == "text" {
				if got, want := strings.TrimSpace(string(out)), strings.TrimSpace(blocks[i+1].body); got != want {
					t.Errorf("docs/embedding.md:%d: %s\nprints:\n%s\nthe page shows:\n%s", b.line, b.body, got, want)
				}
			}
		}
	}
	if ran == 0 {
		t.Fatal("docs/embedding.md shows no sh block")
	}
}
