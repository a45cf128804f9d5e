package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// repo is the repository root, from hack/tools/imagebuild.
const repo = "../../.."

// makeImage runs hack/image.sh into a new folder and returns the folder
// and the digest it printed.
func makeImage(t *testing.T, env ...string) (string, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "image")
	cmd := exec.Command(filepath.Join(repo, "hack/image.sh"), out)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	digest, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/image.sh: %v\n%s", err, stderr.String())
	}
	return out, strings.TrimSpace(string(digest))
}

var release = []string{"VERSION=v0.0.0-imagetest", "REVISION=0123456789abcdef0123456789abcdef01234567", "SOURCE_DATE_EPOCH=1700000000"}

// TestMakeImage builds the image as `make image` does and inspects it
// the way a runtime would: the index, each platform's config and files,
// and the amd64 binary run with --version. A second build gives the same
// digest.
func TestMakeImage(t *testing.T) {
	dir, digest := makeImage(t, release...)
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatalf("not an OCI layout: %v", err)
	}
	outer, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	// The layout's index.json lists the one index the script built.
	om, err := outer.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(om.Manifests) != 1 || om.Manifests[0].Digest.String() != digest || om.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("layout index lists %+v, want the one image index %s", om.Manifests, digest)
	}
	idx, err := outer.ImageIndex(om.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range im.Manifests {
		platforms = append(platforms, m.Platform.String())
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkImage(t, img, m.Platform.Architecture)
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("platforms %v, want %v", platforms, want)
	}

	_, again := makeImage(t, release...)
	if again != digest {
		t.Errorf("a second build of the same commit gave %s, the first %s: the image is not reproducible", again, digest)
	}
}

// checkImage checks one platform's image: config, files, and the binary.
func checkImage(t *testing.T, img v1.Image, arch string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != arch {
		t.Errorf("%s: config says %s/%s", arch, cf.OS, cf.Architecture)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/proxmox-network-controller"}) || cf.Config.Cmd != nil {
		t.Errorf("%s: entrypoint %q cmd %q, want [/proxmox-network-controller] and no cmd", arch, cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("%s: user %q, want 65532:65532", arch, cf.Config.User)
	}
	want := map[string]string{
		"org.opencontainers.image.title":       "proxmox-network-controller",
		"org.opencontainers.image.description": Description,
		"org.opencontainers.image.source":      "https://github.com/pxsubstrate/pxsubstrate",
		"org.opencontainers.image.version":     "v0.0.0-imagetest",
		"org.opencontainers.image.revision":    "0123456789abcdef0123456789abcdef01234567",
		"org.opencontainers.image.created":     "2023-11-14T22:13:20Z",
	}
	if !mapsEqual(cf.Config.Labels, want) {
		t.Errorf("%s: labels %v, want %v", arch, cf.Config.Labels, want)
	}
	if !cf.Created.Time.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("%s: created %s, want SOURCE_DATE_EPOCH", arch, cf.Created)
	}

	files := map[string]*tar.Header{}
	var binary []byte
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		if h.Name == "proxmox-network-controller" {
			if binary, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
		if h.Name == "etc/passwd" {
			b, _ := io.ReadAll(tr)
			if !regexp.MustCompile(`(?m)^nonroot:x:65532:65532:`).Match(b) {
				t.Errorf("%s: /etc/passwd has no user 65532: %q", arch, b)
			}
		}
	}
	var names []string
	for n, h := range files {
		names = append(names, n)
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(time.Unix(1700000000, 0)) {
			t.Errorf("%s: %s is owned by %d:%d at %s, want root at SOURCE_DATE_EPOCH", arch, n, h.Uid, h.Gid, h.ModTime)
		}
	}
	slices.Sort(names)
	// mutate.Extract cleans the names, as a runtime unpacking the layers sees them.
	if want := []string{"etc", "etc/group", "etc/passwd", "proxmox-network-controller"}; !slices.Equal(names, want) {
		t.Errorf("%s: files %v, want %v (no shell, nothing else)", arch, names, want)
	}
	if h := files["etc"]; h == nil || h.Typeflag != tar.TypeDir {
		t.Errorf("%s: /etc is not a directory", arch)
	}
	if h := files["proxmox-network-controller"]; h == nil || h.Mode&0o111 == 0 {
		t.Fatalf("%s: the binary is missing or not executable", arch)
	}
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		t.Fatalf("%s: the binary is not ELF: %v", arch, err)
	}
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != machine {
		t.Errorf("%s: binary for %s", arch, f.Machine)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
			t.Errorf("%s: the binary is dynamically linked (%s)", arch, prog.Type)
		}
	}
	if arch != runtime.GOARCH || runtime.GOOS != "linux" {
		return
	}
	bin := filepath.Join(t.TempDir(), "proxmox-network-controller")
	if err := os.WriteFile(bin, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("the image's binary --version: %v", err)
	}
	if want := "proxmox-network-controller v0.0.0-imagetest " + runtime.Version() + " linux/" + arch + "\n"; string(out) != want {
		t.Errorf("the image's binary --version printed %q, want %q", out, want)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestIndexReproducible: the same inputs give the same digest; another
// time or version another one.
func TestIndexReproducible(t *testing.T) {
	dir := t.TempDir()
	bins := map[string]string{}
	for _, arch := range Architectures {
		bins[arch] = filepath.Join(dir, arch)
		if err := os.WriteFile(bins[arch], []byte("binary for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := Spec{Binaries: bins, RootFS: filepath.Join(repo, "hack/image/rootfs"), Version: "v1", Revision: "abc", Created: time.Unix(1700000000, 0)}
	digest := func(s Spec) string {
		idx, err := Index(s)
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	first := digest(spec)
	if again := digest(spec); again != first {
		t.Errorf("same inputs, digests %s and %s", first, again)
	}
	later := spec
	later.Created = later.Created.Add(time.Second)
	other := spec
	other.Version = "v2"
	if digest(later) == first || digest(other) == first {
		t.Errorf("another time or version gave the same digest %s", first)
	}
}

func TestIndexRefuses(t *testing.T) {
	rootfs := filepath.Join(repo, "hack/image/rootfs")
	cases := map[string]struct {
		spec Spec
		want string
	}{
		"NoVersion":   {Spec{RootFS: rootfs, Revision: "abc"}, "needs a version and a revision"},
		"NoArm64":     {Spec{RootFS: rootfs, Version: "v1", Revision: "abc", Binaries: map[string]string{"amd64": "/dev/null"}}, "no binary for linux/arm64"},
		"MissingFile": {Spec{RootFS: rootfs, Version: "v1", Revision: "abc", Binaries: map[string]string{"amd64": "/nonexistent", "arm64": "/nonexistent"}}, "cannot read the binary"},
		"NoRootFS":    {Spec{RootFS: "/nonexistent", Version: "v1", Revision: "abc"}, "cannot read the image's root files"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Index(tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Index: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestRunFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--out", t.TempDir(), "--created", "yesterday", "--binary", "amd64"}, &stdout, &stderr); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	for _, want := range []string{"--rootfs are required", `--created "yesterday"`, `--binary "amd64": want <arch>=<path>`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q does not say %q", stderr.String(), want)
		}
	}
}

// TestDockerfile keeps the Dockerfile's image equal to the one
// hack/image.sh builds: build flags, files, user, entrypoint, labels.
func TestDockerfile(t *testing.T) {
	df, err := os.ReadFile(filepath.Join(repo, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(repo, "hack/image.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// Continuation lines joined, comments dropped.
	text := regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(df), "")
	var final []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "FROM ") {
			final = nil
		}
		final = append(final, line)
	}
	if len(final) == 0 || final[0] != "FROM scratch" {
		t.Fatalf("the final stage is %q, want FROM scratch (no shell, no base)", final)
	}
	instr := func(name string) []string {
		var out []string
		for _, l := range final {
			if strings.HasPrefix(l, name+" ") {
				out = append(out, strings.TrimPrefix(l, name+" "))
			}
		}
		return out
	}
	if got := instr("USER"); !slices.Equal(got, []string{User}) {
		t.Errorf("Dockerfile USER %q, want %q", got, User)
	}
	var ep []string
	if e := instr("ENTRYPOINT"); len(e) != 1 || json.Unmarshal([]byte(e[0]), &ep) != nil || !slices.Equal(ep, []string{Entrypoint}) {
		t.Errorf("Dockerfile ENTRYPOINT %q, want [%q]", instr("ENTRYPOINT"), Entrypoint)
	}
	if got := instr("CMD"); got != nil {
		t.Errorf("Dockerfile CMD %q: the image has none", got)
	}
	if got := instr("COPY"); !slices.Equal(got, []string{"hack/image/rootfs/ /", "--from=build /out/proxmox-network-controller " + Entrypoint}) {
		t.Errorf("Dockerfile copies %q, want the root files of hack/image/rootfs and the binary at %s", got, Entrypoint)
	}
	labels := map[string]string{}
	for _, l := range instr("LABEL") {
		for _, m := range regexp.MustCompile(`(\S+?)="([^"]*)"`).FindAllStringSubmatch(l, -1) {
			labels[m[1]] = m[2]
		}
	}
	want := Spec{Version: "${VERSION}", Revision: "${REVISION}"}.Labels()
	want["org.opencontainers.image.created"] = "${CREATED}"
	if !mapsEqual(labels, want) {
		t.Errorf("Dockerfile labels %v, want %v", labels, want)
	}
	// The same go build: flags and link flags.
	build := regexp.MustCompile(`CGO_ENABLED=0 GOOS=linux GOARCH=\S+ go build (-trimpath -buildvcs=false) -ldflags "([^"]*)"`)
	d, s := build.FindStringSubmatch(text), build.FindStringSubmatch(regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(script), ""))
	if d == nil || s == nil {
		t.Fatalf("no go build line in the Dockerfile (%v) or hack/image.sh (%v)", d != nil, s != nil)
	}
	norm := func(ld string) string { return strings.NewReplacer("${VERSION}", "V", "$VERSION", "V").Replace(ld) }
	if d[1] != s[1] || norm(d[2]) != norm(s[2]) {
		t.Errorf("go build differs:\nDockerfile:  %s -ldflags %q\nimage.sh:    %s -ldflags %q", d[1], d[2], s[1], s[2])
	}
}
