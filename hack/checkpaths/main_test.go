package main

import (
	"bytes"
	"strings"
	"testing"
)

// climb leaves the repository from a package two folders deep; it is built
// from parts so that this file does not carry the reference it tests.
const climb = "../../.." + "/shared/crds"

func TestCheck(t *testing.T) {
	cases := []struct {
		name, file, content string
		want                []string // references found, in order
	}{
		{"inside from a package", "api/crdtest/x_test.go", `p := "../../config/crd/bases"`, nil},
		{"inside from docs", "docs/api.md", `see [the CRDs](../third_party/crds/README.md)`, nil},
		{"climbs above the root", "api/crdtest/x_test.go", `p := "` + climb + `"`, []string{climb, "shared/crds"}},
		{"root file climbing", "README.md", "run ../other/tool", []string{"../other/tool"}},
		{"reference folder by name", "docs/x.md", "copied from shared/design/facts.md", []string{"shared/design"}},
		{"machine path", "hack/x.sh", `cd /work/main`, []string{"/work/"}},
		{"environment variable", "internal/x.go", `os.Getenv("` + retiredVar + `")`, []string{retiredVar}},
		{"words that only look alike", "docs/x.md", "a shared/common folder; ..; ./x; a/../b; /workdir", nil},
		{"line numbers", "docs/x.md", "one\ntwo ../../x\n", []string{"../../x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, err := Check(c.file, strings.NewReader(c.content))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				got = append(got, f.Ref)
				if f.File != c.file {
					t.Errorf("finding names %q, want %q", f.File, c.file)
				}
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("Check(%q, %q) = %q, want %q", c.file, c.content, got, c.want)
			}
		})
	}
	fs, _ := Check("docs/x.md", strings.NewReader("one\ntwo ../../x\n"))
	if len(fs) != 1 || fs[0].Line != 2 || fs[0].String() != "docs/x.md:2: ../../x refers to a path outside the repository" {
		t.Errorf("finding = %v, want one on line 2", fs)
	}
}

// TestRepositoryIsSelfContained runs the check over this repository's own
// tracked files, as .ci/run does.
func TestRepositoryIsSelfContained(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(&out, &errOut); code != 0 {
		t.Fatalf("checkpaths exit %d:\n%s%s", code, out.String(), errOut.String())
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"../../x", "a/../../b", "shared/crds", "/work/x", retiredVar, "\x00", ""} {
		f.Add("docs/x.md", s)
	}
	f.Fuzz(func(t *testing.T, name, content string) {
		fs, err := Check(name, strings.NewReader(content))
		if err != nil {
			return // a line longer than the scanner's limit
		}
		for _, f := range fs {
			if f.Line < 1 || f.Ref == "" {
				t.Fatalf("finding %+v has no line or reference", f)
			}
		}
	})
}
