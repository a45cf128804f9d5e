package capmoxrender_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

var testDigest = "sha256:" + strings.Repeat("0f", 32)

func TestParseImage(t *testing.T) {
	cases := map[string]struct {
		want    capmoxrender.ImageRef
		wantErr string
	}{
		"busybox:1.37.0":                                     {want: capmoxrender.ImageRef{Name: "docker.io/library/busybox", Tag: "1.37.0"}},
		"ghcr.io/org/ccm@" + testDigest:                      {want: capmoxrender.ImageRef{Name: "ghcr.io/org/ccm", Digest: testDigest}},
		"ghcr.io/org/ccm:v0.16.1@" + testDigest:              {want: capmoxrender.ImageRef{Name: "ghcr.io/org/ccm", Tag: "v0.16.1", Digest: testDigest}},
		"localhost:5000/ccm":                                 {want: capmoxrender.ImageRef{Name: "localhost:5000/ccm"}},
		"ghcr.io/Org/ccm:v1":                                 {wantErr: "is not an image reference"},
		"ghcr.io/org/ccm@sha256:abc":                         {wantErr: "is not an image reference"},
		"ghcr.io/org/ccm:v1 ":                                {wantErr: "is not an image reference"},
		"ghcr.io/org/ccm@sha512:" + strings.Repeat("0f", 64): {wantErr: "pin by sha256"},
	}
	for in, tc := range cases {
		got, err := capmoxrender.ParseImage(in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseImage(%q) = %+v, %v; want an error saying %q", in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseImage(%q) = %+v, %v; want %+v", in, got, err, tc.want)
		}
	}
}

// FuzzParseImage: a reference that parses has a name, a digest only of
// sha256 with 64 hex digits, and reads back the same from its parts.
func FuzzParseImage(f *testing.F) {
	for _, s := range []string{"busybox", "busybox:1.37.0", "ghcr.io/org/ccm@" + testDigest, "ghcr.io/org/ccm:v0.16.1@" + testDigest,
		"localhost:5000/a/b:c", "UPPER/x", "a@sha256:x", "::", "docker.io/library/busybox:1.37.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := capmoxrender.ParseImage(s)
		if err != nil {
			return
		}
		if ref.Name == "" || (ref.Digest != "" && (!strings.HasPrefix(ref.Digest, "sha256:") || len(ref.Digest) != 71)) {
			t.Fatalf("ParseImage(%q) = %+v", s, ref)
		}
		back := ref.Name
		if ref.Tag != "" {
			back += ":" + ref.Tag
		}
		if ref.Digest != "" {
			back += "@" + ref.Digest
		}
		again, err := capmoxrender.ParseImage(back)
		if err != nil || again != ref {
			t.Fatalf("ParseImage(%q) = %+v reads back from %q as %+v, %v", s, ref, back, again, err)
		}
	})
}

// pinnedImages are every image pinned by digest (the digest is a test
// value: this tree resolves no digest).
func pinnedImages() capmoxrender.Images {
	var i capmoxrender.Images
	d := capmoxrender.DefaultImages()
	for _, f := range capmoxrender.ImageFields {
		*i.Field(f) = *d.Field(f)
		if ref, err := capmoxrender.ParseImage(*d.Field(f)); err != nil || !ref.Pinned() {
			*i.Field(f) += "@" + testDigest
		}
	}
	return i
}

// chartPins are the images Cozystack's charts pin by digest, as the charts
// write them (cozystack/cozystack, packages/apps/kubernetes/images/busybox.tag
// for the build-cloud-config and wait-for-kubeconfig init containers, and
// packages/apps/kubernetes-nodes/images/kubectl.tag for the pool's Jobs).
var chartPins = map[string]string{
	"busybox": "docker.io/library/busybox:1.37.0@sha256:1487d0af5f52b4ba31c7e465126ee2123fe3f2305d638e7827681e7cf6c83d5e",
	"kubectl": "docker.io/alpine/k8s:1.33.4@sha256:b0523f0a244ddc4c8e055aa335c040d3d78b3ead5528f4544395f7f9f69c7b68",
}

// TestDefaultImagesCarryChartDigests: a default image the charts pin by
// digest is that pin, and every other default carries no digest (none
// that a chart does not publish).
func TestDefaultImagesCarryChartDigests(t *testing.T) {
	d := capmoxrender.DefaultImages()
	for _, f := range capmoxrender.ImageFields {
		ref, err := capmoxrender.ParseImage(*d.Field(f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		pin, pinned := chartPins[f]
		switch {
		case pinned && *d.Field(f) != pin:
			t.Errorf("images.%s = %s, the chart pins %s", f, *d.Field(f), pin)
		case !pinned && ref.Pinned():
			t.Errorf("images.%s = %s carries a digest no chart publishes", f, *d.Field(f))
		}
	}
}

// TestRequireDigests: with RequireDigests, the defaults the charts pin by
// tag are refused naming every such field (busybox and kubectl, pinned by
// the charts' digests, pass), one unpinned field is refused by name,
// and all pinned (the control) render, in both renders; without it the
// defaults render.
func TestRequireDigests(t *testing.T) {
	ctx := context.Background()
	render := func(o capmoxrender.Options) error {
		if _, err := capmoxrender.RenderCluster(ctx, validCluster(), o); err != nil {
			return err
		}
		_, err := capmoxrender.RenderNodes(ctx, validNodes(), o)
		return err
	}
	if err := render(capmoxrender.Options{}); err != nil {
		t.Fatalf("without RequireDigests the tagged defaults render: %v", err)
	}
	var refusal *capmoxrender.RefusalError
	err := render(capmoxrender.Options{RequireDigests: true})
	if !errors.As(err, &refusal) || refusal.Field != "images.ccm" ||
		!strings.HasPrefix(err.Error(), "images.ccm, images.csiController, images.csiAttacher, images.csiProvisioner, images.csiResizer are not pinned by digest") {
		t.Fatalf("the defaults are refused naming every field the charts pin by tag, and no other: %v", err)
	}
	one := pinnedImages()
	one.CSIResizer = capmoxrender.DefaultImages().CSIResizer
	err = render(capmoxrender.Options{RequireDigests: true, Images: one})
	if !errors.As(err, &refusal) || refusal.Field != "images.csiResizer" || !strings.HasPrefix(err.Error(), "images.csiResizer is not pinned by digest") {
		t.Fatalf("one unpinned image is refused by its field: %v", err)
	}
	objs, err := capmoxrender.RenderCluster(ctx, validCluster(), capmoxrender.Options{RequireDigests: true, Images: pinnedImages(), PreDelete: capmoxrender.PreDeleteInclude})
	if err != nil {
		t.Fatalf("every image pinned renders: %v", err)
	}
	for _, f := range capmoxrender.LintImages(objs) {
		if !f.Pinned {
			t.Errorf("%s %s renders %s unpinned", f.Object, f.Container, f.Image)
		}
	}
	bad := pinnedImages()
	bad.Busybox = "busybox@sha256:abc"
	if err := render(capmoxrender.Options{Images: bad}); !errors.As(err, &refusal) || refusal.Field != "images.busybox" {
		t.Errorf("a malformed override is refused by its field: %v", err)
	}
}

// TestLintImages lists the images of the rendered cluster: every
// container of the default render is tag-only, each with the command
// that resolves it, but build-cloud-config, whose busybox carries the
// chart's digest; a pinned one is not a problem.
func TestLintImages(t *testing.T) {
	objs, err := capmoxrender.RenderCluster(context.Background(), validCluster(), capmoxrender.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range capmoxrender.LintImages(objs) {
		got = append(got, f.Object+" "+f.Container)
		if f.Container == "build-cloud-config" {
			if !f.Pinned || f.Problem != "" || f.Image != chartPins["busybox"] {
				t.Errorf("%+v: the busybox the chart pins is pinned and no problem", f)
			}
			continue
		}
		if f.Pinned || !strings.Contains(f.Problem, "crane digest "+f.Image) {
			t.Errorf("%+v: a tag-only image is a problem with the command that resolves it", f)
		}
	}
	want := []string{
		"Deployment tenant-e2e/kubernetes-k8s-e2e-pccm build-cloud-config", "Deployment tenant-e2e/kubernetes-k8s-e2e-pccm proxmox-cloud-controller-manager",
		"Deployment tenant-e2e/kubernetes-k8s-e2e-pcsi-controller build-cloud-config", "Deployment tenant-e2e/kubernetes-k8s-e2e-pcsi-controller csi-attacher",
		"Deployment tenant-e2e/kubernetes-k8s-e2e-pcsi-controller csi-provisioner", "Deployment tenant-e2e/kubernetes-k8s-e2e-pcsi-controller csi-resizer",
		"Deployment tenant-e2e/kubernetes-k8s-e2e-pcsi-controller proxmox-csi-plugin-controller",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
}
