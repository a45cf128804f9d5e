package capmoxrender

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Capmox selects the capmox API generation to render.
type Capmox string

const (
	// CapmoxV07 renders infrastructure.cluster.x-k8s.io/v1alpha1 for capmox
	// v0.7.x, paired with Cluster API contract v1beta1 (what Cozystack ships:
	// capmox v0.7.7 with CAPI v1.10).
	CapmoxV07 Capmox = "v0.7"
	// CapmoxV08 renders v1alpha2 for capmox v0.8 and later, paired with the
	// Cluster API v1beta2 contract that capmox declares from v0.8.
	CapmoxV08 Capmox = "v0.8"
)

var capmoxVersion = regexp.MustCompile(`^v?0\.([0-9]+)(\.[0-9]+)?$`)

// ParseCapmox accepts a capmox release such as v0.7, v0.7.7, v0.8 or v0.9.0
// and returns the API generation that release serves.
func ParseCapmox(s string) (Capmox, error) {
	m := capmoxVersion.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return "", errorf("cannot parse capmox version %q: %w: write a release such as v0.7 or v0.8", s, ErrInput)
	}
	switch {
	case m[1] == "7":
		return CapmoxV07, nil
	case len(m[1]) > 1 || m[1] >= "8":
		return CapmoxV08, nil
	}
	return "", fmt.Errorf("cannot render for capmox %s: %w: releases before v0.7 are not supported; use v0.7 or v0.8", s, ErrInput)
}

// Images are the container images of the management-side controllers.
type Images struct {
	CCM            string
	CSIController  string
	CSIAttacher    string
	CSIProvisioner string
	CSIResizer     string
	// Busybox runs the build-cloud-config init container.
	Busybox string
	// Kubectl runs the host-entries Job: a shell and kubectl.
	Kubectl string
}

// DefaultImages returns the images Cozystack's charts pin, as they pin
// them. Busybox and kubectl carry the digests the charts publish beside
// their tags (packages/apps/kubernetes/images/busybox.tag and
// packages/apps/kubernetes-nodes/images/kubectl.tag of cozystack/cozystack);
// the controllers are pinned by tag there, and a digest is the registry's
// answer for a tag that the cluster may pull from a mirror, so theirs are
// resolved against the operator's registry and passed as overrides
// (docs/capmoxrender.md, Images). No digest here is one a chart does not
// publish.
func DefaultImages() Images {
	return Images{
		CCM:            "ghcr.io/sergelogvinov/proxmox-cloud-controller-manager:v0.16.1",
		CSIController:  "ghcr.io/sergelogvinov/proxmox-csi-controller:v0.20.0",
		CSIAttacher:    "registry.k8s.io/sig-storage/csi-attacher:v4.12.0",
		CSIProvisioner: "registry.k8s.io/sig-storage/csi-provisioner:v6.3.0",
		CSIResizer:     "registry.k8s.io/sig-storage/csi-resizer:v2.2.1",
		Busybox:        "docker.io/library/busybox:1.37.0@sha256:1487d0af5f52b4ba31c7e465126ee2123fe3f2305d638e7827681e7cf6c83d5e",
		Kubectl:        "docker.io/alpine/k8s:1.33.4@sha256:b0523f0a244ddc4c8e055aa335c040d3d78b3ead5528f4544395f7f9f69c7b68",
	}
}

// ChartRef is where the tenant-side CSI HelmRelease takes its chart from.
type ChartRef struct {
	Chart           string
	SourceKind      string
	SourceName      string
	SourceNamespace string
}

// DefaultCSIChart is the chart reference of the tenant-side CSI release.
func DefaultCSIChart() ChartRef {
	return ChartRef{Chart: "proxmox-csi-plugin", SourceKind: "HelmRepository", SourceName: "cozystack-extra", SourceNamespace: "cozy-public"}
}

// Options steer a render. The zero value renders for capmox v0.7 with the
// default images, offline (no guards) and without network lookups.
type Options struct {
	Capmox Capmox
	// Guards answers the substrate guards; nil disables them.
	Guards SubstrateLookup
	// Networks resolves VPC subnets; nil refuses VPC mode.
	Networks NetworkLookup
	// Templates finds earlier machine templates a MachineSet still uses;
	// nil retains none.
	Templates TemplateLookup
	// Images overrides DefaultImages field by field.
	Images Images
	// CSIChart overrides DefaultCSIChart field by field.
	CSIChart ChartRef
	// Clusters reads the pool's parent Kubernetes object (for the version a
	// pool that names none inherits); nil means DefaultKubernetesVersion.
	Clusters ClusterLookup
	// KubernetesVersions maps a minor such as v1.35 to the patch release
	// rendered for it, such as v1.35.2. A full vX.Y.Z needs no entry.
	KubernetesVersions map[string]string
	// PreDelete says whether RenderCluster prints the Job that frees the
	// tenant's Proxmox volumes before the cluster is deleted.
	PreDelete PreDelete
	// RequireDigests refuses, by field, every image not pinned by digest
	// (name@sha256:<64 hex> or name:tag@sha256:<64 hex>).
	RequireDigests bool
	// VMIDRanges maps a Proxmox pool (a tenant's proxmox.pool) to the VM id
	// range of its tenant, which RenderNodes writes as vmIDRange.
	VMIDRanges map[string]VMIDRange
	// PCIMappings are the Proxmox VE cluster's PCI resource mappings
	// (ParsePCIMappings of GET /cluster/mapping/pci), on whose devices a
	// pool with gpus is placed; nil refuses gpus.
	PCIMappings []PCIMapping
	// PoolTenants maps a Proxmox pool (a tenant's proxmox.pool) to its
	// tenant, whose pciMappings a pool's gpus must name; nil leaves
	// that unchecked.
	PoolTenants map[string]PoolTenant
	// Warn receives what the render cannot check but still renders (such
	// as a diskSize without the template's disk size); nil discards it.
	Warn func(string)
}

// VMIDRange is a tenant's range of VM ids, both ends included.
type VMIDRange struct {
	Start, End int64
}

// The VM ids capmox's vmIDRange accepts (and Proxmox allocates).
const (
	MinVMID = 100
	MaxVMID = 999999999
)

// warnf passes a warning to Options.Warn; as in errorf, a %q of the input
// is cut.
func (o Options) warnf(format string, args ...any) {
	if o.Warn != nil {
		o.Warn(fmt.Sprintf(format, termsafe.QuoteArgs(args...)...))
	}
}

func (o Options) withDefaults() (Options, error) {
	switch o.Capmox {
	case "":
		o.Capmox = CapmoxV07
	case CapmoxV07, CapmoxV08:
	default:
		return o, errorf("cannot render: %w: capmox generation %q; use %q or %q", ErrInput, o.Capmox, CapmoxV07, CapmoxV08)
	}
	if _, err := ParsePreDelete(string(o.PreDelete)); err != nil {
		return o, fmt.Errorf("cannot render: %w", err)
	}
	o.Images = mergeImages(o.Images, DefaultImages())
	if err := checkImages(o.Images, o.RequireDigests); err != nil {
		return o, err
	}
	d := DefaultCSIChart()
	o.CSIChart = ChartRef{
		Chart:           or(o.CSIChart.Chart, d.Chart),
		SourceKind:      or(o.CSIChart.SourceKind, d.SourceKind),
		SourceName:      or(o.CSIChart.SourceName, d.SourceName),
		SourceNamespace: or(o.CSIChart.SourceNamespace, d.SourceNamespace),
	}
	return o, nil
}

func mergeImages(i, d Images) Images {
	return Images{
		CCM:            or(i.CCM, d.CCM),
		CSIController:  or(i.CSIController, d.CSIController),
		CSIAttacher:    or(i.CSIAttacher, d.CSIAttacher),
		CSIProvisioner: or(i.CSIProvisioner, d.CSIProvisioner),
		CSIResizer:     or(i.CSIResizer, d.CSIResizer),
		Busybox:        or(i.Busybox, d.Busybox),
		Kubectl:        or(i.Kubectl, d.Kubectl),
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

var fullVersion = regexp.MustCompile(`^v([0-9]+)\.([0-9]+)\.[0-9]+$`)
var minorVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+$`)

// The Kubernetes minors a cluster may run: the window this release
// supports (see docs/capmoxrender.md); a release outside it is refused
// rather than rendered untried.
const (
	MinKubernetesMinor = 31
	MaxKubernetesMinor = 35
)

// DefaultKubernetesVersion is what a pool renders when neither it nor its
// parent cluster (through Options.Clusters) names a version, as the
// kubernetes-nodes chart falls back to its values' default.
const DefaultKubernetesVersion = "v1.35.2"

// kubernetesVersion resolves the version field to a full vX.Y.Z inside the
// supported window.
func (o Options) kubernetesVersion(field, v string) (string, error) {
	full := v
	switch {
	case fullVersion.MatchString(v):
	case minorVersion.MatchString(v):
		p, ok := o.KubernetesVersions[v]
		if !ok || !fullVersion.MatchString(p) || !strings.HasPrefix(p, v+".") {
			return "", refuse(field, "%s %q names a minor release, and Cluster API needs the patch release: map it with --kubernetes-version %s=%s.N (Options.KubernetesVersions) or write the full version", field, v, v, v)
		}
		full = p
	case v == "":
		return "", refuse(field, "%s is required: write the Kubernetes release such as v1.35.2", field)
	default:
		return "", refuse(field, "%s %q is not a Kubernetes release: write vMAJOR.MINOR.PATCH such as v1.35.2", field, v)
	}
	m := fullVersion.FindStringSubmatch(full)
	minor, _ := strconv.Atoi(m[2])
	if m[1] != "1" || minor < MinKubernetesMinor || minor > MaxKubernetesMinor {
		return "", refuse(field, "%s %q is outside the Kubernetes releases this renderer supports (v1.%d to v1.%d); pick a release in that window", field, v, MinKubernetesMinor, MaxKubernetesMinor)
	}
	return full, nil
}

// releaseTag is a vX.Y.Z image tag.
var releaseTag = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// checkCCMImage refuses a CCM image that cannot start: v0.15.0 reports its
// own version as "0.15.0", without the leading v, and panics parsing it; a
// tag that is not a vX.Y.Z release names no known build. The tag is judged
// also next to a digest (name:tag@sha256:...); a digest alone is taken as
// given.
func checkCCMImage(image string, ref ImageRef) error {
	switch {
	case ref.Tag == "" && ref.Pinned():
		return nil
	case ref.Tag == "":
		return refuse("images.ccm", "the CCM image %q has no tag: pin a release such as %s", image, DefaultImages().CCM)
	case ref.Tag == "v0.15.0":
		return refuse("images.ccm", "the CCM image %q is v0.15.0, whose version string lacks the leading v (0.15.0): it panics parsing it at start and crash-loops; use v0.16.1 or later", image)
	case !releaseTag.MatchString(ref.Tag):
		return refuse("images.ccm", "the CCM image %q is tagged %q, which is not a vMAJOR.MINOR.PATCH release: pin a release such as %s, or a digest", image, ref.Tag, DefaultImages().CCM)
	}
	return nil
}
