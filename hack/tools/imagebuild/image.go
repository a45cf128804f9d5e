// Command imagebuild assembles the controller's OCI image index from
// statically linked binaries, without a container daemon or a registry,
// into an OCI image layout. hack/image.sh (make image) builds the binaries
// and runs it; the Dockerfile at the repository root builds the same image
// with Docker, and a test keeps the two in step.
//
// The image is reproducible: every file has the time of --created, owner
// root, a fixed mode; the config, the labels and the layer order depend
// only on the flags and the files.
package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image runs, as the Dockerfile declares it too.
const (
	// Entrypoint is the binary's path in the image.
	Entrypoint = "/proxmox-network-controller"
	// User is distroless's nonroot user and group, which
	// hack/image/rootfs/etc/passwd names; the manifests run as 65532.
	User = "65532:65532"
	// Title is the image's org.opencontainers.image.title.
	Title = "proxmox-network-controller"
	// Description is the image's org.opencontainers.image.description.
	Description = "Allocates VLANs to ProxmoxNetworks, keeps their Kube-OVN Vlans and OVN gateways, and judges attachments"
	// Source is the image's org.opencontainers.image.source.
	Source = "https://github.com/pxsubstrate/pxsubstrate"
)

// Architectures are the platforms of the index, all linux.
var Architectures = []string{"amd64", "arm64"}

// Spec is what one image index is built from.
type Spec struct {
	// Binaries maps an architecture to its statically linked controller.
	Binaries map[string]string
	// RootFS is a folder copied under / (etc/passwd, etc/group).
	RootFS string
	// Version and Revision are the release and the commit.
	Version, Revision string
	// Created is the time of every file and of the image.
	Created time.Time
}

// Labels are the image's org.opencontainers.image.* labels.
func (s Spec) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       Title,
		"org.opencontainers.image.description": Description,
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.revision":    s.Revision,
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
	}
}

// Index builds the image index: one image per architecture, each a
// layer of RootFS and a layer holding the binary.
func Index(s Spec) (v1.ImageIndex, error) {
	if s.Version == "" || s.Revision == "" {
		return nil, fmt.Errorf("the image needs a version and a revision (got %q, %q)", s.Version, s.Revision)
	}
	base, err := dirLayer(s.RootFS, s.Created)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range Architectures {
		bin, ok := s.Binaries[arch]
		if !ok {
			return nil, fmt.Errorf("no binary for linux/%s", arch)
		}
		img, err := image(s, arch, base, bin)
		if err != nil {
			return nil, fmt.Errorf("linux/%s: %w", arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}},
		})
	}
	return idx, nil
}

func image(s Spec, arch string, base v1.Layer, bin string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("cannot read the binary: %w", err)
	}
	app, err := tarLayer([]file{{name: Entrypoint[1:], mode: 0o755, data: data}}, s.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, base, app); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Author = Source
	cf.Config.Entrypoint = []string{Entrypoint}
	cf.Config.User = User
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = s.Labels()
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: s.Created.UTC()})
}

// file is one entry of a layer; a nil data with mode dir is a folder.
type file struct {
	name string
	mode int64
	dir  bool
	data []byte
}

// dirLayer makes a layer of the files under root, in name order.
func dirLayer(root string, created time.Time) (v1.Layer, error) {
	var files []file
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			files = append(files, file{name: filepath.ToSlash(rel), mode: 0o755, dir: true})
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: only files and folders go into the image", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, file{name: filepath.ToSlash(rel), mode: 0o644, data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cannot read the image's root files: %w", err)
	}
	return tarLayer(files, created)
}

// tarLayer makes a gzip layer of files, owned by root, all at created.
func tarLayer(files []file, created time.Time) (v1.Layer, error) {
	slices.SortFunc(files, func(a, b file) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	for _, f := range files {
		// Parent folders first, as an unpacker expects them.
		for dir := path.Dir(f.name); dir != "."; dir = path.Dir(dir) {
			if !seen[dir] && !slices.ContainsFunc(files, func(g file) bool { return g.dir && g.name == dir }) {
				return nil, fmt.Errorf("%s: its folder %s is not in the layer", f.name, dir)
			}
		}
		seen[f.name] = true
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: created.UTC(), Format: tar.FormatPAX, Uname: "root", Gname: "root"}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// Write writes idx as an OCI image layout into dir, which must not exist
// or be empty. The layout's index.json lists idx as its one entry, so that
// tools reading the layout without a reference (skopeo copy --all
// oci:DIR, crane push DIR) take the whole multi-platform index.
func Write(dir string, idx v1.ImageIndex) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty; remove it first", dir)
	}
	p, err := layout.Write(dir, empty.Index)
	if err == nil {
		err = p.AppendIndex(idx)
	}
	if err != nil {
		return fmt.Errorf("cannot write the OCI layout %s: %w", dir, err)
	}
	return nil
}
