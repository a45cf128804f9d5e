package capmoxrender

import (
	"fmt"
	"sort"
	"strings"

	"github.com/distribution/reference"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// ImageRef is a container image reference, read as container runtimes
// read it (github.com/distribution/reference; a name without a registry
// is on docker.io).
type ImageRef struct {
	// Name is the normalized repository, such as ghcr.io/org/image or
	// docker.io/library/busybox.
	Name string
	// Tag and Digest are empty when the reference has none.
	Tag, Digest string
}

// Pinned reports whether the reference names its content by digest.
func (r ImageRef) Pinned() bool { return r.Digest != "" }

// ParseImage reads an image reference: name, name:tag, name@sha256:<64
// hex> or name:tag@sha256:<64 hex>. A digest of another algorithm is
// refused: the images are pinned by sha256, which every registry serves.
func ParseImage(s string) (ImageRef, error) {
	named, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		return ImageRef{}, errorf("%q is not an image reference (%w): write name:tag, name@sha256:<64 hex> or name:tag@sha256:<64 hex>", s, err)
	}
	out := ImageRef{Name: named.Name()}
	if t, ok := named.(reference.Tagged); ok {
		out.Tag = t.Tag()
	}
	if d, ok := named.(reference.Digested); ok {
		if d.Digest().Algorithm() != "sha256" {
			return ImageRef{}, errorf("%q is pinned by %s: pin by sha256:<64 hex>", s, d.Digest().Algorithm())
		}
		out.Digest = d.Digest().String()
	}
	return out, nil
}

// ImageFields names the Images fields, as refusals and --image call them.
var ImageFields = []string{"ccm", "csiController", "csiAttacher", "csiProvisioner", "csiResizer", "busybox", "kubectl"}

// Field returns a pointer to the field of i that ImageFields names, nil
// for another name.
func (i *Images) Field(name string) *string {
	return map[string]*string{
		"ccm": &i.CCM, "csiController": &i.CSIController, "csiAttacher": &i.CSIAttacher, "csiProvisioner": &i.CSIProvisioner,
		"csiResizer": &i.CSIResizer, "busybox": &i.Busybox, "kubectl": &i.Kubectl,
	}[name]
}

// checkImages refuses, by field, an image that is not a reference, a CCM
// release that cannot start, and, with requireDigests, every image not
// pinned by digest (all of them named in one refusal).
func checkImages(images Images, requireDigests bool) error {
	var unpinned []string
	for _, f := range ImageFields {
		ref, err := ParseImage(*images.Field(f))
		if err != nil {
			return refuse("images."+f, "images.%s: %v", f, err)
		}
		if f == "ccm" {
			if err := checkCCMImage(*images.Field(f), ref); err != nil {
				return err
			}
		}
		if requireDigests && !ref.Pinned() {
			unpinned = append(unpinned, "images."+f)
		}
	}
	if len(unpinned) > 0 {
		return refuse(unpinned[0], "%s not pinned by digest, and digests are required: resolve each tag against the registry the cluster pulls from (crane digest IMAGE:TAG) and pass it as --image FIELD=IMAGE:TAG@sha256:<digest> (Options.Images)", strings.Join(unpinned, ", ")+map[bool]string{true: " is", false: " are"}[len(unpinned) == 1])
	}
	return nil
}

// ImageFinding is one container image of a rendered object.
type ImageFinding struct {
	Object    string `json:"object"` // Kind namespace/name
	Container string `json:"container"`
	// Field is the path of the container's image in the object, such as
	// spec.template.spec.containers[0].image.
	Field  string `json:"field"`
	Image  string `json:"image"`
	Pinned bool   `json:"pinned"`
	// NotReference is true when the image is not an image reference:
	// missing, empty, not a string, or a string that does not parse.
	NotReference bool `json:"notReference,omitempty"`
	// Problem says why the image is not pinned (or not a reference);
	// empty when it is pinned.
	Problem string `json:"problem,omitempty"`
}

// podSpecPaths are where a workload keeps its Pod spec.
var podSpecPaths = [][]string{{"spec"}, {"spec", "template", "spec"}, {"spec", "jobTemplate", "spec", "template", "spec"}}

// LintImages lists the images of every container and init container of
// objs (Pods, workloads with a Pod template, CronJobs), sorted by object
// and container, each with whether it is pinned by digest. A container
// whose image is missing, empty or not a string, and a container that is
// not a mapping, are findings too (not pinned, not an image reference),
// named by their field, never passed over.
func LintImages(objs []*unstructured.Unstructured) []ImageFinding {
	var out []ImageFinding
	for _, o := range objs {
		object := fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
		for _, path := range podSpecPaths {
			for _, kind := range []string{"initContainers", "containers"} {
				p := append(append([]string{}, path...), kind)
				cs, _, _ := unstructured.NestedSlice(o.Object, p...)
				for i, c := range cs {
					field := fmt.Sprintf("%s[%d]", strings.Join(p, "."), i)
					out = append(out, containerImage(object, field, c))
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Object != out[j].Object {
			return out[i].Object < out[j].Object
		}
		return out[i].Container < out[j].Container
	})
	return out
}

// containerImage is the finding of the container at field.
func containerImage(object, field string, c any) ImageFinding {
	m, ok := c.(map[string]any)
	if !ok {
		return ImageFinding{Object: object, Field: field, NotReference: true, Problem: fmt.Sprintf("%s is %s, not a container: a container is a mapping with a name and an image", field, describe(c))}
	}
	name, _ := m["name"].(string)
	field += ".image"
	notRef := ImageFinding{Object: object, Container: name, Field: field, NotReference: true}
	switch image, ok := m["image"].(string); {
	case m["image"] == nil:
		notRef.Problem = field + " is missing: a container needs an image reference, name:tag@sha256:<64 hex>"
	case !ok:
		notRef.Image = termsafe.Cut(fmt.Sprint(m["image"]))
		notRef.Problem = fmt.Sprintf("%s is %s, not an image reference: write it as a string, name:tag@sha256:<64 hex>", field, describe(m["image"]))
	case image == "":
		notRef.Problem = field + " is empty: a container needs an image reference, name:tag@sha256:<64 hex>"
	default:
		f := imageFinding(object, name, image)
		f.Field = field
		return f
	}
	return notRef
}

// describe names a decoded value and shows it, cut: "a number 5".
func describe(v any) string {
	return kindOf(v) + " " + termsafe.Cut(fmt.Sprint(v))
}

func imageFinding(object, container, image string) ImageFinding {
	f := ImageFinding{Object: object, Container: container, Image: image}
	ref, err := ParseImage(image)
	switch {
	case err != nil:
		f.Problem, f.NotReference = err.Error(), true
	case !ref.Pinned():
		f.Problem = "not pinned by digest: the tag can be moved to other content; resolve it (crane digest " + termsafe.Cut(image) + ") and pin name:tag@sha256:<digest>"
	default:
		f.Pinned = true
	}
	return f
}
