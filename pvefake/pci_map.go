package pvefake

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// pciMapping is a section of mapping/pci.cfg (pve-guest-common's
// PVE::Mapping::PCI): the logical device's options as the file holds them
// (description; mdev and live-migration-capable as 0 or 1) and its map,
// one property string per node's device, kept as they were sent.
type pciMapping struct {
	id   string
	opts map[string]string
	maps []string
}

// pciMapOptions are the options of a PCI mapping besides its map, in the
// order write_config prints them (sorted).
var pciMapOptions = []string{"description", "live-migration-capable", "mdev"}

// valid reports whether the section reads back: parse_config's check_config
// drops a section without a map line (an empty map writes none), after
// which the ID is unknown to every method but still a section of the file.
func (m *pciMapping) valid() bool { return m != nil && len(m.maps) > 0 }

// pciMap returns the mapping of an ID as cfs_read_file shows it, or nil.
func (s *state) pciMap(id string) *pciMapping {
	if m := s.pciMaps[id]; m.valid() {
		return m
	}
	return nil
}

// putPCIMap writes a section: a new ID goes to the end of the file, an
// existing one (an invalid section being replaced) keeps its place.
func (s *state) putPCIMap(m *pciMapping) {
	if _, ok := s.pciMaps[m.id]; !ok {
		s.pciOrder = append(s.pciOrder, m.id)
	}
	s.pciMaps[m.id] = m
}

func (s *state) dropPCIMap(id string) {
	delete(s.pciMaps, id)
	s.pciOrder = slices.DeleteFunc(s.pciOrder, func(x string) bool { return x == id })
}

// pciConfigText is mapping/pci.cfg as SectionConfig's write_config prints
// it: the ID alone on the header line, the required map lines, then the
// set options sorted, a blank line after each section.
func (s *state) pciConfigText() string {
	var b strings.Builder
	for _, id := range s.pciOrder {
		m := s.pciMaps[id]
		b.WriteString(id + "\n")
		for _, line := range m.maps {
			b.WriteString("\tmap " + line + "\n")
		}
		for _, k := range pciMapOptions {
			if v, ok := m.opts[k]; ok {
				b.WriteString("\t" + k + " " + v + "\n")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// pciDigest is the SHA-1 of mapping/pci.cfg, the digest its methods
// return and compare.
func (s *state) pciDigest() string {
	sum := sha1.Sum([]byte(s.pciConfigText()))
	return hex.EncodeToString(sum[:])
}

// entry is the mapping as GET returns it: the section's type, map and
// options, the booleans as numbers.
func (m *pciMapping) entry() map[string]any {
	out := map[string]any{"type": "pci", "map": slices.Clone(m.maps)}
	for k, v := range m.opts {
		if k == "description" {
			out[k] = v
			continue
		}
		out[k] = b2i(v == "1")
	}
	return out
}

// pciMapEntry is one item of a mapping's map ($map_fmt): a device of a
// node, with the IDs that detect a hardware change.
type pciMapEntry struct {
	node        string
	path        string // one or more PCI paths separated by ';'
	id          string // vendor:device
	subsystemID string
	iommuGroup  string
	description string
}

// devices are the PCI paths the entry names.
func (e pciMapEntry) devices() []string { return strings.Split(e.path, ";") }

var (
	// mapPCIPathRe is $map_fmt's path: lower-case hex, the domain required.
	mapPCIPathRe = regexp.MustCompile(`^(?:[a-f0-9]{4,}:[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?;)*[a-f0-9]{4,}:[a-f0-9]{2}:[a-f0-9]{2}(?:\.[a-f0-9])?$`)
	pciIDRe      = regexp.MustCompile(`^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{4}$`)
	// perlIntRe is PVE::JSONSchema::is_integer.
	perlIntRe = regexp.MustCompile(`^[+-]?\d+$`)
	// propPartRe is parse_property_string's key=value part: Perl's "."
	// stops at a line feed and "$" also matches before a final one.
	propPartRe = regexp.MustCompile(`^([^=]+)=([^\n]+)\n?$`)
)

// propSchema checks one key of a property string; it returns check_prop's
// message, "" when the value is good.
type propSchema struct {
	required bool
	check    func(v string) string
}

func patternCheck(re *regexp.Regexp) func(string) string {
	return func(v string) string {
		if !re.MatchString(v) {
			return "value does not match the regex pattern"
		}
		return ""
	}
}

func maxLenCheck(n int) func(string) string {
	return func(v string) string {
		if utf8.RuneCountInString(v) > n {
			return fmt.Sprintf("value may only be %d characters long", n)
		}
		return ""
	}
}

var pciMapFormat = map[string]propSchema{
	"node": {required: true, check: func(v string) string {
		if err := fmtNode(v); err != nil {
			return "invalid format - " + err.Error()
		}
		return ""
	}},
	"id":           {required: true, check: patternCheck(pciIDRe)},
	"subsystem-id": {check: patternCheck(pciIDRe)},
	"path":         {required: true, check: patternCheck(mapPCIPathRe)},
	"iommugroup": {check: func(v string) string {
		if !perlIntRe.MatchString(v) {
			return fmt.Sprintf("type check ('integer') failed - got '%s'", v)
		}
		return ""
	}},
	"description": {check: maxLenCheck(4096)},
}

// parsePropertyString is PVE::JSONSchema::parse_property_string over a
// format: comma-separated key=value parts (a part without '=' is the
// default key's value, when the format has one), then check_object, whose
// failures are "format error" with one "<path>.<key>: <message>" line per
// key, sorted.
func parsePropertyString(format map[string]propSchema, defaultKey, v, path string, booleans map[string]bool) (map[string]string, error) {
	res := map[string]string{}
	for _, part := range strings.Split(v, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		if m := propPartRe.FindStringSubmatch(part); m != nil {
			k, val := m[1], m[2]
			if _, dup := res[k]; dup {
				return nil, fmt.Errorf("duplicate key in comma-separated list property: %s", k)
			}
			if _, ok := format[k]; !ok {
				return nil, fmt.Errorf("invalid key in comma-separated list property: %s", k)
			}
			if booleans[k] {
				val = parseBoolean(val)
			}
			res[k] = val
			continue
		}
		if strings.Contains(part, "=") {
			return nil, fmt.Errorf("missing key in comma-separated list property")
		}
		if defaultKey == "" {
			return nil, fmt.Errorf("value without key, but schema does not define a default key")
		}
		if d := res[defaultKey]; d != "" && d != "0" {
			return nil, fmt.Errorf("duplicate key in comma-separated list property: %s", defaultKey)
		}
		res[defaultKey] = part
	}
	var errs []string
	for k, sch := range format {
		val, ok := res[k]
		if !ok {
			if sch.required {
				errs = append(errs, path+"."+k+": property is missing and it is not optional")
			}
			continue
		}
		if msg := sch.check(val); msg != "" {
			errs = append(errs, path+"."+k+": "+msg)
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("format error\n%s", strings.Join(errs, "\n"))
	}
	return res, nil
}

// parseBoolean is PVE::JSONSchema::parse_boolean: 1, on, yes, true and 0,
// off, no, false in any case become 1 and 0; other values stay for the
// type check to refuse.
func parseBoolean(v string) string {
	switch strings.ToLower(v) {
	case "1", "on", "yes", "true":
		return "1"
	case "0", "off", "no", "false":
		return "0"
	}
	return v
}

// parsePCIMapEntry parses an item of a PCI mapping's map; path is the
// item's place in the request ("map[0]").
func parsePCIMapEntry(v, path string) (pciMapEntry, error) {
	res, err := parsePropertyString(pciMapFormat, "", v, path, nil)
	if err != nil {
		return pciMapEntry{}, err
	}
	return pciMapEntry{node: res["node"], path: res["path"], id: res["id"], subsystemID: res["subsystem-id"],
		iommuGroup: res["iommugroup"], description: res["description"]}, nil
}

// String prints the entry as a map item: node, path and id, then the
// optional keys that are set.
func (e pciMapEntry) String() string {
	parts := []string{"node=" + e.node, "path=" + e.path, "id=" + e.id}
	for _, kv := range [][2]string{{"subsystem-id", e.subsystemID}, {"iommugroup", e.iommuGroup}, {"description", e.description}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	return strings.Join(parts, ",")
}

// nodeEntries is get_node_mapping: the map items for a node, in order;
// items that do not parse are skipped (PVE warns).
func (m *pciMapping) nodeEntries(node string) []pciMapEntry {
	var out []pciMapEntry
	for _, item := range m.maps {
		if e, err := parsePCIMapEntry(item, ""); err == nil && e.node == node {
			out = append(out, e)
		}
	}
	return out
}

// PCIMappingSpec describes a PCI resource mapping (mapping/pci.cfg) for
// AddPCIMapping, as POST /cluster/mapping/pci takes it.
type PCIMappingSpec struct {
	ID          string
	Description string
	// Map holds one property string per device of a node, as PVE's map
	// items: "node=<node>,path=<pci path>,id=<vendor:device>" with
	// optional subsystem-id, iommugroup and description. A node with
	// several items offers several devices, of which a starting guest
	// takes a free one.
	Map []string
	// Mdev marks the devices as providers of mediated devices.
	Mdev bool
	// LiveMigrationCapable lets running guests live-migrate with the
	// devices.
	LiveMigrationCapable bool
}

// AddPCIMapping adds a PCI resource mapping. It fails with PVE's message
// where POST /cluster/mapping/pci would refuse the same mapping.
func (srv *Server) AddPCIMapping(spec PCIMappingSpec) error {
	return srv.withState(func(s *state) error {
		if err := fmtConfigID(spec.ID); err != nil {
			return fmt.Errorf("cannot add PCI mapping: %w", err)
		}
		if len(spec.Map) == 0 {
			return fmt.Errorf("cannot add PCI mapping %s: missing value for required option 'map'", spec.ID)
		}
		for i, item := range spec.Map {
			if _, err := parsePCIMapEntry(item, fmt.Sprintf("map[%d]", i)); err != nil {
				return fmt.Errorf("cannot add PCI mapping %s: map[%d]: %w", spec.ID, i, err)
			}
		}
		if strings.ContainsAny(spec.Description, "\r\n") {
			return fmt.Errorf("cannot add PCI mapping %s: property contains a line feed", spec.ID)
		}
		if s.pciMap(spec.ID) != nil {
			return fmt.Errorf("cannot add PCI mapping: pci ID '%s' already defined", spec.ID)
		}
		m := &pciMapping{id: spec.ID, opts: map[string]string{}, maps: slices.Clone(spec.Map)}
		if spec.Description != "" {
			m.opts["description"] = spec.Description
		}
		if spec.Mdev {
			m.opts["mdev"] = "1"
		}
		if spec.LiveMigrationCapable {
			m.opts["live-migration-capable"] = "1"
		}
		s.putPCIMap(m)
		return nil
	})
}
