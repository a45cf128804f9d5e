package capmoxrender

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/strictyaml"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// PCIMapping is a Proxmox VE PCI resource mapping as GET
// /cluster/mapping/pci lists it (pve-manager over pve-guest-common's
// PVE::Mapping::PCI): a cluster-wide id naming one logical device and,
// for each node, the host devices that are it. A guest's hostpciN:
// mapping=<id> takes a free one of its node's devices when it starts.
type PCIMapping struct {
	ID          string
	Description string
	// Devices are the mapping's map items, in order: one host device (or
	// one multifunction device) of a node each.
	Devices []PCIMappedDevice
	// Mdev marks the devices as providers of mediated devices.
	Mdev bool
	// LiveMigrationCapable lets running guests live-migrate with them.
	LiveMigrationCapable bool
}

// PCIMappedDevice is one item of a mapping's map, as PVE writes it:
// node=<node>,path=<pci path>,id=<vendor:device> with optional
// subsystem-id, iommugroup and description.
type PCIMappedDevice struct {
	Node string
	// Path is the device's PCI address (0000:01:00.0), or several of a
	// multifunction device joined by ';'.
	Path string
	// ID is vendor:device, such as 10de:2236 for an NVIDIA A10.
	ID          string
	SubsystemID string
	// IOMMUGroup is the device's IOMMU group, -1 when the item has none.
	IOMMUGroup  int
	Description string
}

// Vendor is the device's PCI vendor id, such as 10de (NVIDIA), in lower case.
func (d PCIMappedDevice) Vendor() string {
	v, _, _ := strings.Cut(d.ID, ":")
	return strings.ToLower(v)
}

// NodeDevices counts the mapping's devices per node.
func (m PCIMapping) NodeDevices() map[string]int {
	out := map[string]int{}
	for _, d := range m.Devices {
		out[d.Node]++
	}
	return out
}

// pciMappingEntry is one object of the answer's data array. The fields PVE
// returns besides these (checks, with check-node) are refused by name.
type pciMappingEntry struct {
	ID                   string    `json:"id"`
	Type                 string    `json:"type,omitempty"`
	Map                  *[]string `json:"map"`
	Description          string    `json:"description,omitempty"`
	Digest               string    `json:"digest,omitempty"`
	Mdev                 *pveBool  `json:"mdev,omitempty"`
	LiveMigrationCapable *pveBool  `json:"live-migration-capable,omitempty"`
}

// pveBool is a PVE boolean as pvesh prints it: 0 or 1 (true and false too).
type pveBool bool

// UnmarshalJSON reads 0, 1, true or false.
func (b *pveBool) UnmarshalJSON(data []byte) error {
	switch string(bytes.TrimSpace(data)) {
	case "0", "false":
		*b = false
	case "1", "true":
		*b = true
	default:
		return fmt.Errorf("want 0 or 1, got %s", termsafe.Cut(string(data)))
	}
	return nil
}

// ErrPCIMappings is wrapped by every error of ParsePCIMappings.
var ErrPCIMappings = errors.New("invalid PCI mappings")

// pciMappingsHint says what the input must be.
const pciMappingsHint = "give the answer of pvesh get /cluster/mapping/pci --output-format json (the data array, or the whole {\"data\": [...]} answer)"

// ParsePCIMappings reads the PCI resource mappings of a Proxmox VE cluster
// from the answer of GET /cluster/mapping/pci: its data array (what
// pvesh get /cluster/mapping/pci --output-format json prints) or the whole
// {"data": [...]} answer, in JSON or YAML. It is strict: a field the
// answer does not have, a key a map item does not have, a mapping id that
// is not PVE's, a mapping without devices or a device listed twice, and a
// mapping listed twice, are refused by their place ([1].map[0]: ...),
// wrapping ErrPCIMappings. An answer read with check-node (which adds
// checks to each mapping) is refused: read it without.
func ParsePCIMappings(data []byte) ([]PCIMapping, error) {
	j, err := strictyaml.JSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w; %s", ErrPCIMappings, err, pciMappingsHint)
	}
	var entries []pciMappingEntry
	prefix := ""
	switch t := bytes.TrimSpace(j); {
	case len(t) > 0 && t[0] == '{':
		var whole struct {
			Data *[]pciMappingEntry `json:"data"`
		}
		if err := decodeMappings(t, &whole); err != nil {
			return nil, err
		}
		if whole.Data == nil {
			return nil, fmt.Errorf("%w: the object has no data array; %s", ErrPCIMappings, pciMappingsHint)
		}
		entries, prefix = *whole.Data, "data"
	case len(t) > 0 && t[0] == '[':
		if err := decodeMappings(t, &entries); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: the document is not a list of mappings; %s", ErrPCIMappings, pciMappingsHint)
	}
	return pciMappings(entries, prefix)
}

// decodeMappings decodes strictly, naming a refused field by its place.
func decodeMappings(data []byte, into any) error {
	err := strictyaml.UnmarshalJSON(data, into)
	if fields := strictyaml.FieldErrors(err); len(fields) > 0 {
		parts := make([]string, 0, len(fields))
		for _, f := range fields {
			switch {
			case f.Duplicate:
				parts = append(parts, "duplicate field "+termsafe.Cut(f.Path)+": give it once")
			case strings.HasSuffix(f.Path, ".checks"):
				parts = append(parts, termsafe.Cut(f.Path)+": the answer was read with check-node; read it without (pvesh get /cluster/mapping/pci --output-format json)")
			default:
				parts = append(parts, "unknown field "+termsafe.Cut(f.Path)+": a PCI mapping has id, type, map, description, digest, mdev and live-migration-capable")
			}
		}
		return fmt.Errorf("%w: %s", ErrPCIMappings, strings.Join(parts, "; "))
	}
	var ve *strictyaml.ValueError
	if errors.As(err, &ve) {
		return fmt.Errorf("%w: %s: %w", ErrPCIMappings, termsafe.Cut(ve.Path), ve.Err)
	}
	if err != nil {
		return fmt.Errorf("%w: %w; %s", ErrPCIMappings, err, pciMappingsHint)
	}
	return nil
}

// pciMappings checks each entry and turns it into a PCIMapping.
func pciMappings(entries []pciMappingEntry, prefix string) ([]PCIMapping, error) {
	out := make([]PCIMapping, 0, len(entries))
	first := map[string]int{}
	for i, e := range entries {
		at := fmt.Sprintf("%s[%d]", prefix, i)
		switch j, seen := first[e.ID]; {
		case !capmox.ValidMappingID(e.ID):
			return nil, errorf("%w: %s.id is %q, which is not a Proxmox VE mapping id (a letter, then one or more letters, digits, - or _)", ErrPCIMappings, at, e.ID)
		case seen:
			return nil, errorf("%w: %s.id %q is listed again (first at %s[%d]): PVE lists each mapping once; give one answer, unedited", ErrPCIMappings, at, e.ID, prefix, j)
		case e.Type != "" && e.Type != "pci":
			return nil, errorf("%w: %s.type is %q: give the PCI mappings (/cluster/mapping/pci), not another kind", ErrPCIMappings, at, e.Type)
		case e.Map == nil || len(*e.Map) == 0:
			return nil, errorf("%w: %s (%q) has no map: a mapping without devices is one PVE does not list", ErrPCIMappings, at, e.ID)
		}
		first[e.ID] = i
		m := PCIMapping{ID: e.ID, Description: e.Description, Mdev: e.Mdev != nil && bool(*e.Mdev),
			LiveMigrationCapable: e.LiveMigrationCapable != nil && bool(*e.LiveMigrationCapable)}
		seen := map[[2]string]int{}
		for k, item := range *e.Map {
			d, err := parseMapItem(item)
			if err != nil {
				return nil, fmt.Errorf("%w: %s.map[%d]: %w", ErrPCIMappings, at, k, err)
			}
			if prev, dup := seen[[2]string{d.Node, d.Path}]; dup {
				return nil, errorf("%w: %s.map[%d] is node %s's device %s again (as %s.map[%d]): a device counts once", ErrPCIMappings, at, k, d.Node, d.Path, at, prev)
			}
			seen[[2]string{d.Node, d.Path}] = k
			m.Devices = append(m.Devices, d)
		}
		out = append(out, m)
	}
	return out, nil
}

var (
	// mapPathPattern is PVE::Mapping::PCI's path: lower-case hex with the
	// domain, one or more joined by ';'.
	mapPathPattern = regexp.MustCompile(`^(?:[a-f0-9]{4,}:[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?;)*[a-f0-9]{4,}:[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?$`)
	pciIDPattern   = regexp.MustCompile(`^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{4}$`)
	intPattern     = regexp.MustCompile(`^[+-]?[0-9]{1,9}$`)
)

// mapItemKeys are the keys of a map item, in the order PVE writes them.
var mapItemKeys = []string{"node", "path", "id", "subsystem-id", "iommugroup", "description"}

// parseMapItem reads a map item: comma-separated key=value pairs of
// mapItemKeys, node, path and id required.
func parseMapItem(item string) (PCIMappedDevice, error) {
	kv := map[string]string{}
	for _, part := range strings.Split(item, ",") {
		k, v, ok := strings.Cut(part, "=")
		switch {
		case strings.TrimSpace(part) == "":
			continue
		case !ok:
			return PCIMappedDevice{}, errorf("%q is not key=value", part)
		case !slices.Contains(mapItemKeys, k):
			return PCIMappedDevice{}, errorf("unknown key %q: a map item has %s", k, strings.Join(mapItemKeys, ", "))
		}
		if _, dup := kv[k]; dup {
			return PCIMappedDevice{}, errorf("key %q is given twice", k)
		}
		kv[k] = v
	}
	for _, k := range mapItemKeys[:3] {
		if _, ok := kv[k]; !ok {
			return PCIMappedDevice{}, errorf("%s is missing: a map item is node=<node>,path=<pci path>,id=<vendor:device>", k)
		}
	}
	d := PCIMappedDevice{Node: kv["node"], Path: kv["path"], ID: kv["id"], SubsystemID: kv["subsystem-id"], IOMMUGroup: -1, Description: kv["description"]}
	switch {
	case !nodeName.MatchString(d.Node):
		return d, errorf("node %q is not a Proxmox VE node name", d.Node)
	case !mapPathPattern.MatchString(d.Path):
		return d, errorf("path %q is not a PCI address such as 0000:01:00.0 (lower-case hex, several joined by ';')", d.Path)
	case !pciIDPattern.MatchString(d.ID):
		return d, errorf("id %q is not vendor:device such as 10de:2236", d.ID)
	case d.SubsystemID != "" && !pciIDPattern.MatchString(d.SubsystemID):
		return d, errorf("subsystem-id %q is not vendor:device such as 10de:1482", d.SubsystemID)
	}
	if g, ok := kv["iommugroup"]; ok {
		n, err := strconv.Atoi(strings.TrimPrefix(g, "+"))
		if !intPattern.MatchString(g) || err != nil {
			return d, errorf("iommugroup %q is not an integer", g)
		}
		d.IOMMUGroup = n
	}
	return d, nil
}

// pciMappingIDs lists the mappings' ids, sorted, for a message.
func pciMappingIDs(ms []PCIMapping) string {
	ids := make([]string, 0, len(ms))
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	sort.Strings(ids)
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}
