package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rig is a checkout at /srv/build/alice/pxsubstrate of a user whose home is
// /var/lib/ci: neither folder is on any real machine's list below.
var rig = NewRules("/srv/build/alice/pxsubstrate", "/var/lib/ci")

func TestNewRules(t *testing.T) {
	cases := []struct {
		root, home string
		want       []string
	}{
		{"/srv/build/alice/pxsubstrate", "/var/lib/ci", []string{"/srv/build/alice/pxsubstrate", "/srv/build/alice", "/srv/build", "/var/lib/ci"}},
		{"/tmp/x/repo", "/tmp", []string{"/tmp/x/repo", "/tmp/x"}},
		{"/root/src/repo/", "/root", []string{"/root/src/repo", "/root/src", "/root"}},
		{"/checkout", "", []string{"/checkout"}},
		{"relative/dir", "/", nil},
	}
	for _, c := range cases {
		if got := NewRules(c.root, c.home).Machine; !slices.Equal(got, c.want) {
			t.Errorf("NewRules(%q, %q).Machine = %q, want %q", c.root, c.home, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name, file, content string
		want                []string // references found, in order
	}{
		{"inside from a package", "api/crdtest/x_test.go", `p := "../../config/crd/bases"`, nil},
		{"inside from docs", "docs/api.md", `see [the CRDs](../third_party/crds/README.md)`, nil},
		{"climbs above the root", "api/crdtest/x_test.go", `p := "../../../elsewhere/crds"`, []string{"../../../elsewhere/crds"}},
		{"root file climbing", "README.md", "run ../other/tool", []string{"../other/tool"}},
		{"the checkout's own path", "hack/x.sh", `cd /srv/build/alice/pxsubstrate/hack`, []string{"/srv/build/alice/pxsubstrate/hack"}},
		{"a folder beside the checkout", "docs/x.md", "read /srv/build/alice/notes.md", []string{"/srv/build/alice/notes.md"}},
		{"the folder that holds it", "docs/x.md", "(cd /srv/build)", []string{"/srv/build"}},
		{"the user's home", "hack/x.sh", `export PATH=/var/lib/ci/bin:$PATH`, []string{"/var/lib/ci/bin"}},
		{"a Linux home", "docs/x.md", "cp /home/bob/kubeconfig .", []string{"/home/bob/kubeconfig"}},
		{"a macOS home", "docs/x.md", `"/Users/bob/go/bin"`, []string{"/Users/bob/go/bin"}},
		{"a Windows home", "docs/x.md", `C:\Users\bob\repo`, []string{`C:\Users\bob\repo`}},
		{"both kinds on one line", "docs/x.md", "/home/bob/a ../../b", []string{"../../b", "/home/bob/a"}},
		{
			"standard folders, URLs, API and Proxmox paths", "docs/x.md",
			"/etc/pve/user.cfg /tmp/x /srv/www /mnt/pve/local https://host:8006/api2/json /vms/100 /spec/x $HOME/x ~/x /srv/buildings /home/",
			nil,
		},
		{"words that only look alike", "docs/x.md", "a shared/common folder; ..; ./x; a/../b; /workdir", nil},
		{"line numbers", "docs/x.md", "one\ntwo ../../x\n", []string{"../../x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, err := rig.Check(c.file, strings.NewReader(c.content))
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
			if !slices.Equal(got, c.want) {
				t.Errorf("Check(%q, %q) = %q, want %q", c.file, c.content, got, c.want)
			}
		})
	}
	fs, _ := rig.Check("docs/x.md", strings.NewReader("one\ntwo ../../x\n"))
	if len(fs) != 1 || fs[0].Line != 2 || fs[0].String() != "docs/x.md:2: ../../x refers to a path outside the repository" {
		t.Errorf("finding = %v, want one on line 2", fs)
	}
}

// TestCheckAll: files are read from the root, this command's folder, binary
// files and files gone from the work tree are skipped, and an unreadable
// file is an error naming it.
func TestCheckAll(t *testing.T) {
	root := t.TempDir()
	rs := NewRules(root, "")
	write := func(name, content string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.md", "see "+root+"/docs/b.md\n")
	write(self+"main_test.go", "cd "+root+"\n")
	write("bin/blob", "\x00"+root)
	write("docs/b.md", "fine\n")
	found, err := checkAll(rs, root, []string{"docs/a.md", self + "main_test.go", "bin/blob", "docs/b.md", "docs/gone.md", ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].File != "docs/a.md" || found[0].Ref != root+"/docs/b.md" {
		t.Errorf("checkAll = %v, want the one reference in docs/a.md", found)
	}
	if err := os.Mkdir(filepath.Join(root, "dir.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := checkAll(rs, root, []string{"dir.md"}); err == nil || !strings.Contains(err.Error(), "dir.md") {
		t.Errorf("checkAll of a folder: err = %v, want one naming dir.md", err)
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

// FuzzLine: every reference the line checker returns is text of the line,
// and one that does not climb is an absolute path of the machine.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"../../x", "a/../../b", "/srv/build/alice/x", "/home/bob/x", `c:\users\x\y`,
		"https://h/srv/build", "$HOME/x", "\x00", ""} {
		f.Add("docs", s)
	}
	f.Fuzz(func(t *testing.T, dir, line string) {
		for _, ref := range rig.Line(dir, line) {
			if ref == "" || !strings.Contains(line, ref) {
				t.Fatalf("Line(%q, %q) returned %q, not text of the line", dir, line, ref)
			}
			if !escapes(dir, ref) && !rig.machines(ref) && !windowsHome.MatchString(ref) {
				t.Fatalf("Line(%q, %q) returned %q, which neither climbs nor names the machine", dir, line, ref)
			}
		}
	})
}

// FuzzLineSkipsNothing: the text Line looks for before each regular
// expression drops no reference the expressions alone would find.
func FuzzLineSkipsNothing(f *testing.F) {
	for _, s := range []string{"../../x", "a/../../b", "/srv/build/alice/x", "/home/bob/x", "/Users/bob", `C:\Users\x\y`,
		"see /srv/build and ../up", "x=/srv/buildx/y", "\x00", ""} {
		f.Add("docs", s)
	}
	f.Fuzz(func(t *testing.T, dir, line string) {
		var want []string
		for _, m := range relative.FindAllStringSubmatch(line, -1) {
			if escapes(dir, m[1]) {
				want = append(want, m[1])
			}
		}
		for _, m := range absolute.FindAllStringSubmatch(line, -1) {
			if rig.machines(m[1]) {
				want = append(want, m[1])
			}
		}
		for _, m := range windowsHome.FindAllStringSubmatch(line, -1) {
			want = append(want, m[1])
		}
		if got := rig.Line(dir, line); !slices.Equal(got, want) {
			t.Fatalf("Line(%q, %q) = %q, the expressions alone find %q", dir, line, got, want)
		}
	})
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"../../x", "a/../../b", "/srv/build/x", "/home/bob/x", "\x00", ""} {
		f.Add("docs/x.md", s)
	}
	f.Fuzz(func(t *testing.T, name, content string) {
		fs, err := rig.Check(name, strings.NewReader(content))
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
