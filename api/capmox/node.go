package capmox

import (
	"regexp"
	"strings"
)

// nodeTagPrefix starts every node tag.
const nodeTagPrefix = "node-"

// nodeNamePattern is a Proxmox VE node name (pve-node, a DNS label) as
// NodeTag writes it: lower-case letters, digits and inner hyphens, at
// most 63 characters.
var nodeNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ValidNodeName reports whether node is a Proxmox VE node name: a DNS
// label of letters, digits and inner hyphens, at most 63 characters.
// Node names are compared without regard to case, as host names are.
func ValidNodeName(node string) bool { return nodeNamePattern.MatchString(strings.ToLower(node)) }

// NodeTag is the template tag that marks a Talos template as the one of
// Proxmox VE node node, whose local storage holds its disk: node-<node>,
// such as node-pve1, in lower case (Proxmox VE tags are compared in lower
// case, and so are host names). Templates made one per node carry their
// node's tag beside the shared tags, so each tag set names exactly one
// template in the cluster, as capmox requires; a pool with local
// templates selects each node's by the shared tags and that node's tag,
// and pins the workers that clone it to that node (allowedNodes), where
// the linked clone stays on the template's local storage. node must
// satisfy ValidNodeName; NodeTag does not check it.
func NodeTag(node string) string { return nodeTagPrefix + strings.ToLower(node) }

// ParseNodeTag reads a tag NodeTag wrote: the node name, in lower case,
// and true. Any other tag gives false, an upper-case one included: exactly
// one tag names each node.
func ParseNodeTag(tag string) (node string, ok bool) {
	rest, ok := strings.CutPrefix(tag, nodeTagPrefix)
	if !ok || !nodeNamePattern.MatchString(rest) {
		return "", false
	}
	return rest, true
}

// MismatchedNodeTag returns the index of the first of tags that is a node
// tag (one ParseNodeTag reads) other than NodeTag(node), and false when
// none is; with node "" every node tag is one. It is the one rule for
// both ends, as MismatchedGPUTag is: a template may carry only the tag of
// the node that holds it, and a pool never lists a node tag itself (the
// render adds each node's to the pool's MachineDeployment of that node).
func MismatchedNodeTag(tags []string, node string) (int, bool) {
	want := ""
	if node != "" {
		want = NodeTag(node)
	}
	for i, t := range tags {
		if _, ok := ParseNodeTag(t); ok && t != want {
			return i, true
		}
	}
	return 0, false
}
