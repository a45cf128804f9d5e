package talostemplate

import (
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// Defaults of the reference template builder.
const (
	// DefaultFactoryURL is the public Talos Image Factory.
	DefaultFactoryURL = "https://factory.talos.dev"
	// DefaultDiskSize is the template's system disk; every clone inherits it.
	DefaultDiskSize = "20G"
	// DefaultCPU provides x86-64-v2, which Talos needs and PVE's kvm64 lacks.
	DefaultCPU = "x86-64-v2-AES"
)

// Spec is a validated Talos VM template. Build it with NewSpec from raw
// inputs, or fill it directly and call Validate.
type Spec struct {
	VMID         int    `json:"vmid"`
	Storage      string `json:"storage"`
	TalosVersion string `json:"talosVersion"`
	SchematicID  string `json:"schematicID"`
	// FactoryURL has no trailing slash.
	FactoryURL string `json:"factoryURL"`
	// FactoryCA holds PEM CERTIFICATE blocks that curl on the hypervisor
	// trusts on top of the system store; empty for a publicly trusted factory.
	FactoryCA string `json:"factoryCA,omitempty"`
	DiskSize  string `json:"diskSize"`
	CPU       string `json:"cpu"`
	// Tags is the normalised tag set (see ParseTags).
	Tags []string `json:"tags"`
	// DisableAgent creates the template without the QEMU guest agent
	// channel. Leave it false unless the schematic has no qemu-guest-agent.
	DisableAgent bool `json:"disableAgent,omitempty"`
	// PCIMappings are the template's PCI devices, one Proxmox VE PCI
	// resource mapping id per device (hostpci0, hostpci1, ...: each
	// mapping=<id>,pcie=1, on a q35 machine): one mapping, listed once
	// per device, so a worker with two GPUs lists it twice. Every clone
	// takes a free device of the mapping on its node when it starts. The
	// template then carries the mapping's GPU tag (capmox.GPUTag), by
	// which pools with gpus select it.
	PCIMappings []string `json:"pciMappings,omitempty"`
	// Node is the node whose local storage holds the template, "" for a
	// template every node can clone (on shared storage). A template of a
	// node carries the node's tag (capmox.NodeTag) and is built on that
	// node; PerNode makes one per node.
	Node string `json:"node,omitempty"`
}

// Inputs are the raw template inputs as an operator gives them: command-line
// arguments, flags, a chart values file. Empty fields take the defaults.
type Inputs struct {
	VMID         string
	Storage      string
	TalosVersion string
	SchematicID  string
	FactoryURL   string
	FactoryCA    []byte
	DiskSize     string
	CPU          string
	// Tags is a comma-separated list; empty means DefaultTags.
	Tags         string
	DisableAgent bool
	// PCIMappings are Spec.PCIMappings: a mapping id per device.
	PCIMappings []string
}

var (
	vmidPattern      = regexp.MustCompile(`^[1-9][0-9]{2,8}$`)
	storagePattern   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)
	versionPattern   = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9a-z.]+)?$`)
	schematicPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)
	factoryPattern   = regexp.MustCompile(`^https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~/-]*)?$`)
	diskSizePattern  = regexp.MustCompile(`^[1-9][0-9]*G$`)
	// quantityPattern is a Kubernetes binary quantity of whole GiB or TiB.
	quantityPattern = regexp.MustCompile(`^([1-9][0-9]{0,6})(Gi|Ti)$`)
	cpuPattern      = regexp.MustCompile(`^[A-Za-z0-9_.+-]+$`)
)

// matches applies a whole-value pattern and refuses any value with a line
// break, which a line-oriented check would let through on one of its lines.
func matches(re *regexp.Regexp, v string) bool {
	return !strings.ContainsAny(v, "\n\r") && re.MatchString(v)
}

// NewSpec applies the defaults to in, checks every input and returns the
// Spec. All failing inputs are reported together; each is an *InvalidError
// wrapping ErrInvalidSpec.
func NewSpec(in Inputs) (Spec, error) {
	s := Spec{
		Storage:      in.Storage,
		TalosVersion: in.TalosVersion,
		SchematicID:  in.SchematicID,
		FactoryURL:   strings.TrimSuffix(or(in.FactoryURL, DefaultFactoryURL), "/"),
		DiskSize:     pveDiskSize(or(in.DiskSize, DefaultDiskSize)),
		CPU:          or(in.CPU, DefaultCPU),
		DisableAgent: in.DisableAgent,
		PCIMappings:  slices.Clone(in.PCIMappings),
	}
	var errs []error
	if !matches(vmidPattern, in.VMID) {
		errs = append(errs, vmidError(in.VMID))
	} else {
		s.VMID, _ = strconv.Atoi(in.VMID) // at most nine digits: always fits
	}
	errs = append(errs, s.checkScalars()...)
	if len(in.FactoryCA) > 0 {
		ca, err := checkFactoryCA(in.FactoryCA, s.FactoryURL)
		if err != nil {
			errs = append(errs, err)
		}
		s.FactoryCA = ca
	}
	gpus := checkPCIMappings(s.PCIMappings)
	errs = append(errs, gpus)
	tags := in.Tags
	if tags == "" {
		if !matches(versionPattern, s.TalosVersion) || !matches(schematicPattern, s.SchematicID) {
			return s, errors.Join(errs...) // the default tags derive from these two
		}
		tags = DefaultTagList(s.TalosVersion, s.SchematicID)
	}
	set, err := ParseTags(tags)
	if err != nil {
		errs = append(errs, err)
	}
	if err == nil && gpus == nil {
		// A GPU template carries the tag of its devices, whatever tags
		// were asked for; a tag that names other devices is refused.
		if t := s.GPUTag(); t != "" && !slices.Contains(set, t) {
			set = slices.Insert(set, sortedIndex(set, t), t)
		}
		errs = append(errs, checkGPUTag(set, s))
	}
	s.Tags = set
	errs = append(errs, checkTalosTag(set, s.TalosVersion))
	if err == nil {
		errs = append(errs, checkNode(set, ""))
	}
	return s, errors.Join(errs...)
}

// sortedIndex is where t goes in the sorted set.
func sortedIndex(set []string, t string) int {
	i, _ := slices.BinarySearch(set, t)
	return i
}

// checkTalosTag refuses a tag that names another Talos release than the
// template boots: the rule render nodes applies to a pool's templateTags
// (capmox.MismatchedTalosTag), so that no template is built that a pool
// of its own release could not select.
func checkTalosTag(tags []string, version string) error {
	if !matches(versionPattern, version) {
		return nil // the version's own error says what is wrong
	}
	if i, bad := capmox.MismatchedTalosTag(tags, version); bad {
		return invalid("tags", tags[i], "template tag "+show(tags[i])+" names another Talos release than the template boots ("+version+")",
			"a pool installing "+version+" whose templateTags carry "+show(tags[i])+" is refused by render nodes; tag the template "+capmox.TalosTag(version)+", or build it of that release")
	}
	return nil
}

// Validate checks a Spec built by hand with the same rules NewSpec applies,
// and also that Tags is already normalised.
func (s Spec) Validate() error {
	var errs []error
	if s.VMID < 100 || s.VMID > 999_999_999 {
		errs = append(errs, vmidError(strconv.Itoa(s.VMID)))
	}
	errs = append(errs, s.checkScalars()...)
	gpus := checkPCIMappings(s.PCIMappings)
	errs = append(errs, gpus)
	if strings.HasSuffix(s.FactoryURL, "/") {
		errs = append(errs, invalid("factoryURL", s.FactoryURL, "factory URL '"+show(s.FactoryURL)+"' is not a plain http(s) URL",
			"drop the trailing /"))
	}
	if s.FactoryCA != "" {
		if _, err := checkFactoryCA([]byte(s.FactoryCA), s.FactoryURL); err != nil {
			errs = append(errs, err)
		}
	}
	set, err := NormalizeTags(s.Tags)
	switch {
	case err != nil:
		errs = append(errs, err)
	case !slices.Equal(set, s.Tags):
		errs = append(errs, invalid("tags", strings.Join(s.Tags, ","), "template tags are not normalised",
			"pass them through ParseTags or NormalizeTags: lower-case, sorted, without duplicates"))
	default:
		errs = append(errs, checkTalosTag(s.Tags, s.TalosVersion), checkNode(s.Tags, s.Node))
		if gpus == nil {
			errs = append(errs, checkGPUTag(s.Tags, s))
		}
	}
	return errors.Join(errs...)
}

func (s Spec) checkScalars() []error {
	var errs []error
	if !matches(storagePattern, s.Storage) {
		errs = append(errs, invalid("storage", s.Storage, "storage "+show(s.Storage)+" is not a Proxmox storage id",
			"use a storage id as pvesm status lists it, such as local-lvm"))
	}
	if !matches(versionPattern, s.TalosVersion) {
		errs = append(errs, invalid("version", s.TalosVersion,
			"Talos version '"+show(s.TalosVersion)+"' is not vMAJOR.MINOR.PATCH with an optional pre-release suffix",
			"such as v1.13.6 or v1.14.0-beta.1"))
	}
	if !matches(schematicPattern, s.SchematicID) {
		errs = append(errs, invalid("schematic", s.SchematicID,
			"schematic '"+show(s.SchematicID)+"' is not an Image Factory schematic id",
			"64 lowercase hex characters, as pxsubstrate talos schematic-id prints"))
	}
	if !matches(factoryPattern, s.FactoryURL) {
		errs = append(errs, invalid("factoryURL", s.FactoryURL, "factory URL '"+show(s.FactoryURL)+"' is not a plain http(s) URL",
			"scheme, host, optional port and a path of letters, digits and . _ ~ / -, without query or credentials"))
	}
	if !matches(diskSizePattern, s.DiskSize) {
		errs = append(errs, invalid("diskSize", s.DiskSize,
			"disk size "+show(s.DiskSize)+" is not a whole number of gibibytes such as 20Gi (PVE writes it 20G)", ""))
	}
	if !matches(cpuPattern, s.CPU) {
		errs = append(errs, invalid("cpu", s.CPU, "cpu type "+show(s.CPU)+" is not a Proxmox CPU model name",
			"such as x86-64-v2-AES or host"))
	}
	return errs
}

func vmidError(v string) error {
	return invalid("vmid", v, "vmid "+show(v)+" is not a Proxmox VM id (100-999999999)", "")
}

// Name is the template's VM name: talos-<version>-<first 8 of the schematic>.
func (s Spec) Name() string { return "talos-" + s.TalosVersion + "-" + short(s.SchematicID) }

// ImageURL is the nocloud disk image the template is built from. The
// nocloud platform is the one whose config source capmox feeds; the
// openstack image ignores it and the worker never joins.
func (s Spec) ImageURL() string {
	return s.FactoryURL + "/image/" + s.SchematicID + "/" + s.TalosVersion + "/nocloud-amd64.raw.xz"
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// pveDiskSize writes a Kubernetes quantity of whole gibibytes or
// tebibytes (20Gi, 1Ti) as PVE's disk size (20G, 1024G), whose G is a
// gibibyte; anything else is left for the validation to name.
func pveDiskSize(v string) string {
	m := quantityPattern.FindStringSubmatch(v)
	if m == nil {
		return v
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return v
	}
	if m[2] == "Ti" {
		n *= 1024
	}
	return strconv.Itoa(n) + "G"
}
