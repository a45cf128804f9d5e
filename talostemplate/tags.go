package talostemplate

import (
	"regexp"
	"slices"
	"strings"
)

// tagPattern is a normalised template tag: PVE's pve-tag format after
// lower-casing, which is also the pattern capmox's CRD puts on matchTags.
var tagPattern = regexp.MustCompile(`^[a-z0-9_][a-z0-9_+.-]*$`)

// ValidTag reports whether t is a valid, already lower-cased Proxmox tag.
func ValidTag(t string) bool { return tagPattern.MatchString(t) }

// selectorPattern is the case-insensitive pattern capmox's CRD puts on
// templateSelector.matchTags items; the API server refuses other values.
var selectorPattern = regexp.MustCompile(`(?i)^[a-z0-9_][a-z0-9_+.-]*$`)

// ValidSelectorTag reports whether t is accepted in a ProxmoxMachineTemplate's
// templateSelector.matchTags.
func ValidSelectorTag(t string) bool { return selectorPattern.MatchString(t) }

// ParseTags turns a comma-separated tag list into the tag set a template is
// created with: split on commas only, lower-cased (ASCII letters only, as the
// C locale does), empty entries dropped, duplicates removed, sorted in byte
// order. Each remaining tag must be a valid Proxmox tag. Nothing is trimmed:
// "a, b" holds the tag " b", which is refused.
func ParseTags(list string) ([]string, error) {
	if strings.ContainsAny(list, "\n\r") {
		return nil, invalid("tags", list, "template tags are comma-separated and may not contain a newline", "")
	}
	return NormalizeTags(strings.Split(list, ","))
}

// NormalizeTags applies ParseTags' rules to tags that are already split.
func NormalizeTags(tags []string) ([]string, error) {
	set := make([]string, 0, len(tags))
	for _, t := range tags {
		if t = lowerASCII(t); t != "" {
			set = append(set, t)
		}
	}
	slices.Sort(set)
	set = slices.Compact(set)
	if len(set) == 0 {
		return nil, invalid("tags", "", "the template needs at least one tag",
			"give a comma-separated list such as cozystack,talos")
	}
	var bad []string
	for _, t := range set {
		if !ValidTag(t) {
			bad = append(bad, show(t))
		}
	}
	if len(bad) > 0 {
		return nil, invalid("tags", strings.Join(tags, ","), "not a valid Proxmox tag: "+strings.Join(bad, " "),
			"a tag starts with a letter, digit or _ and holds only letters, digits and _ + . -; separate tags with commas and no spaces")
	}
	return set, nil
}

// DefaultTags is the tag set the reference builder gives a template when no
// tags are asked for: cozystack, talos, talos-<version> and
// schematic-<first 8 characters of the schematic ID>, normalised.
func DefaultTags(version, schematicID string) ([]string, error) {
	return ParseTags(DefaultTagList(version, schematicID))
}

// DefaultTagList is DefaultTags before normalisation, as a comma-separated list.
func DefaultTagList(version, schematicID string) string {
	return "cozystack,talos,talos-" + version + ",schematic-" + short(schematicID)
}

// PVETags joins tags the way PVE stores them on a guest: separated by ';'.
func PVETags(tags []string) string { return strings.Join(tags, ";") }

// lowerASCII lower-cases A-Z only. Unicode case mapping is deliberately not
// applied: it would turn the Kelvin sign into a plain "k" and accept a tag
// that the shell builder and PVE both refuse.
func lowerASCII(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return 'A' <= r && r <= 'Z' }) {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}
