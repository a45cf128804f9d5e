package talostemplate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

// Templates on each node's local storage.
//
// On a cluster without shared storage a template's disk lives on one
// node, and Proxmox VE clones it only there ("can't clone VM to node
// '<node>' (VM uses local storage)"). Each node then gets a template of
// its own, on its own storage, tagged with the shared tags and the node's
// capmox.NodeTag: every tag set still names exactly one template in the
// cluster, as capmox requires, and a pool with proxmox.localTemplates
// renders one MachineDeployment per node that selects the node's
// template and stays on the node.

// PerNode returns the spec of each node's template: s (which names no
// node) on each of nodes, in the nodes' name order, the first with s's
// VMID and each next one with the next VMID, each carrying its node's tag
// beside s's tags. The nodes must be Proxmox VE node names, each listed
// once (without regard to case), and their VMIDs within 100-999999999.
func PerNode(s Spec, nodes []string) ([]Spec, error) {
	if s.Node != "" {
		return nil, invalid("node", s.Node, "the spec already names node "+show(s.Node), "give PerNode the spec shared by every node's template, without a node")
	}
	if len(nodes) == 0 {
		return nil, invalid("nodes", "", "no node is given for the templates of each node's local storage", "name the nodes, such as pve1,pve2,pve3")
	}
	sorted := slices.SortedFunc(slices.Values(nodes), func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	var errs []error
	for i, n := range sorted {
		switch {
		case !capmox.ValidNodeName(n):
			errs = append(errs, invalid("nodes", n, "node "+show(n)+" is not a Proxmox VE node name", "use the node names pvecm nodes lists: letters, digits and inner hyphens"))
		case i > 0 && strings.EqualFold(sorted[i-1], n):
			errs = append(errs, invalid("nodes", n, "node "+show(n)+" is listed twice", "list each node once"))
		}
	}
	if last := s.VMID + len(sorted) - 1; last > 999_999_999 {
		errs = append(errs, invalid("vmid", fmt.Sprint(s.VMID), fmt.Sprintf("the %d templates take the VMIDs %d to %d, beyond 999999999", len(sorted), s.VMID, last), "start from a lower VMID"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]Spec, len(sorted))
	for i, n := range sorted {
		t := s
		t.VMID, t.Node = s.VMID+i, n
		t.PCIMappings = slices.Clone(s.PCIMappings)
		t.Tags = slices.Clone(s.Tags)
		tag := capmox.NodeTag(n)
		t.Tags = slices.Insert(t.Tags, sortedIndex(t.Tags, tag), tag)
		if err := t.Validate(); err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// SharedTags are the tags of s without its node's tag: what a pool with
// proxmox.localTemplates lists as templateTags (the render adds each
// node's tag).
func (s Spec) SharedTags() []string {
	if s.Node == "" {
		return slices.Clone(s.Tags)
	}
	tag := capmox.NodeTag(s.Node)
	return slices.DeleteFunc(slices.Clone(s.Tags), func(t string) bool { return t == tag })
}

// checkNode refuses a node that is no Proxmox VE node name, a node tag
// of another node than the template's (the rule render nodes applies to a
// pool's templateTags, capmox.MismatchedNodeTag), and a template of a
// node without its node's tag.
func checkNode(tags []string, node string) error {
	if node != "" && !capmox.ValidNodeName(node) {
		return invalid("node", node, "node "+show(node)+" is not a Proxmox VE node name", "use the node names pvecm nodes lists: letters, digits and inner hyphens")
	}
	if i, bad := capmox.MismatchedNodeTag(tags, node); bad {
		if node == "" {
			return invalid("tags", tags[i], "template tag "+show(tags[i])+" is a node tag, which only a template of one node's local storage carries",
				"build the templates of each node with --per-node, which tags each with its node")
		}
		return invalid("tags", tags[i], "template tag "+show(tags[i])+" names another node than the template's ("+node+")", "leave node tags out of the tags: each node's template gets its own")
	}
	if node != "" && !slices.Contains(tags, capmox.NodeTag(node)) {
		return invalid("tags", strings.Join(tags, ","), "the template of node "+node+" lacks its node tag "+capmox.NodeTag(node), "build it with PerNode, which adds the tag")
	}
	return nil
}

// ClusterNodes lists the cluster's nodes (GET /nodes), in name order:
// the nodes whose local storage gets a template when none are named.
func ClusterNodes(ctx context.Context, c pveapi.Client) ([]string, error) {
	return readNodes(ctx, c)
}

// PerNodePoolSnippet is PoolSnippet for the templates of each node
// (PerNode's specs): the shared tags, localTemplates: true, and the nodes
// as the pool's allowedNodes.
func PerNodePoolSnippet(specs []Spec) string {
	if len(specs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(PoolSnippet(specs[0]))
	b.WriteString("  allowedNodes:\n")
	for _, s := range specs {
		fmt.Fprintf(&b, "    - %q\n", s.Node)
	}
	return b.String()
}
