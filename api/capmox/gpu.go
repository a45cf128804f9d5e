package capmox

import (
	"regexp"
	"strconv"
	"strings"
)

// MaxGPUs is how many PCI devices a Proxmox VE guest takes: qemu-server's
// hostpci0 to hostpci15.
const MaxGPUs = 16

// mappingIDPattern is pve-common's pve-configid ($CONFIGID_RE, matched
// without regard to case), the id of a PCI resource mapping
// (/cluster/mapping/pci) and of a guest's hostpciN: mapping=<id>.
var mappingIDPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]+$`)

// ValidMappingID reports whether id is a Proxmox VE PCI resource mapping
// id: a letter, then one or more letters, digits, '-' or '_'. Mapping ids
// are case-sensitive: gpu and GPU are two mappings.
func ValidMappingID(id string) bool { return mappingIDPattern.MatchString(id) }

// gpuTagPrefix starts every GPU tag.
const gpuTagPrefix = "gpu-"

// countPattern is a device count as GPUTag writes it: decimal digits
// without a sign or a leading zero.
var countPattern = regexp.MustCompile(`^[1-9][0-9]?$`)

// GPUTag is the template tag that marks a Talos template as carrying
// count devices (hostpci0 to hostpci<count-1>) of the PCI resource mapping
// id: gpu-<count>x-<id>, such as gpu-1x-a100 or gpu-2x-l40s. Proxmox VE
// tags are lower-case [a-z0-9_+.-] once normalised while mapping ids are
// case-sensitive, so an upper-case letter of id is written '+' and the
// letter in lower case (RTX_A4000 becomes +r+t+x_+a4000), which no id
// holds otherwise: two mappings, or two counts, never share a tag, and
// ParseGPUTag reads the mapping and the count back. The template carries
// it, and a pool whose gpus name count devices of id selects the template
// by it (capmox compares tag sets), so a pool never clones a template of
// another mapping or of another device count. id must satisfy
// ValidMappingID and count be 1 to MaxGPUs; GPUTag does not check them.
func GPUTag(id string, count int) string {
	var b strings.Builder
	b.WriteString(gpuTagPrefix + strconv.Itoa(count) + "x-")
	for i := 0; i < len(id); i++ {
		c := id[i]
		if 'A' <= c && c <= 'Z' {
			b.WriteByte('+')
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// ParseGPUTag reads a tag GPUTag wrote: the mapping id and the device
// count, and true. Any other tag, a tag in another spelling of the same
// mapping and count included (a leading zero, an escape of a character
// that is not a letter), gives false: exactly one tag names each mapping
// and count.
func ParseGPUTag(tag string) (id string, count int, ok bool) {
	rest, ok := strings.CutPrefix(tag, gpuTagPrefix)
	if !ok {
		return "", 0, false
	}
	n, enc, ok := strings.Cut(rest, "x-")
	if !ok || !countPattern.MatchString(n) {
		return "", 0, false
	}
	count, err := strconv.Atoi(n)
	if err != nil || count > MaxGPUs {
		return "", 0, false
	}
	var b strings.Builder
	for i := 0; i < len(enc); i++ {
		c := enc[i]
		switch {
		case c == '+' && i+1 < len(enc) && 'a' <= enc[i+1] && enc[i+1] <= 'z':
			i++
			b.WriteByte(enc[i] - ('a' - 'A'))
		case 'A' <= c && c <= 'Z', c == '+':
			return "", 0, false
		default:
			b.WriteByte(c)
		}
	}
	id = b.String()
	if !ValidMappingID(id) {
		return "", 0, false
	}
	return id, count, true
}

// MismatchedGPUTag returns the index of the first of tags that is a GPU
// tag (gpu- and a digit) other than GPUTag(id, count), and false when none
// is; with count 0 (no GPUs) every GPU tag is one. It is the one rule for
// both ends, as MismatchedTalosTag is: a template may carry only the GPU
// tag of its own devices, and a pool may select a template only by the
// GPU tag of its own gpus, since the template's devices are what its
// workers get.
func MismatchedGPUTag(tags []string, id string, count int) (int, bool) {
	want := ""
	if count > 0 {
		want = GPUTag(id, count)
	}
	for i, t := range tags {
		if rest, ok := strings.CutPrefix(t, gpuTagPrefix); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' && t != want {
			return i, true
		}
	}
	return 0, false
}
