package talostemplate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// NodeSelection is capmox's selection for the MachineDeployment of one
// node of a pool with proxmox.localTemplates: the pool's tags and the
// node's tag (capmox.NodeTag), cloned on the node.
type NodeSelection struct {
	// Node is the node the MachineDeployment's workers are pinned to.
	Node string `json:"node"`
	Selection
	// Error is capmox's error text when it would not clone, or the
	// refusal Proxmox VE gives when the selected template is on another
	// node than Node and its disk is on that node's local storage.
	Error string `json:"error,omitempty"`
	// Explanation says why, in plain words.
	Explanation []string `json:"explanation"`
}

// ErrOtherNode is the refusal of a template that capmox selects for a
// node but that sits on another node: Proxmox VE refuses to clone a VM
// that uses local storage to another node.
var ErrOtherNode = errors.New("the selected template sits on another node")

// SelectPerNode replays, for each of nodes, capmox's selection for the
// MachineDeployment of that node of a pool with local templates: the pool's
// selector and the node's tag. Without nodes, the nodes are those of the
// guests listed. Each selection that does not clone, or whose template
// sits on another node than the workers (so that qemu-server refuses the
// clone: "can't clone VM to node '<node>' (VM uses local storage)"), has
// its Error; the error returned joins them, nil when every node clones.
func SelectPerNode(resources []VMResource, selector, nodes []string, opts SelectOptions) ([]NodeSelection, error) {
	if len(nodes) == 0 {
		for _, r := range resources {
			if r.Node != "" && !slices.Contains(nodes, r.Node) {
				nodes = append(nodes, r.Node)
			}
		}
		slices.Sort(nodes)
	}
	if i, bad := capmox.MismatchedNodeTag(selector, ""); bad {
		return nil, fmt.Errorf("the selector's tag %s is a node tag: give the pool's templateTags, without node tags; each node's is added", termsafe.Quote(selector[i]))
	}
	out := make([]NodeSelection, 0, len(nodes))
	var errs []error
	for _, n := range nodes {
		if !capmox.ValidNodeName(n) {
			return nil, fmt.Errorf("node %s is not a Proxmox VE node name", termsafe.Quote(n))
		}
		sel, err := Select(resources, append(slices.Clone(selector), capmox.NodeTag(n)), opts)
		var nf *NotFoundError
		if err != nil && !errors.As(err, &nf) {
			return nil, err
		}
		ns := NodeSelection{Node: n, Selection: sel, Explanation: Explain(sel)}
		switch {
		case nf != nil:
			ns.Error = nf.Error()
			errs = append(errs, fmt.Errorf("node %s: %w", n, err))
		case !strings.EqualFold(sel.Template.Node, n):
			err := fmt.Errorf("%w: template %s carries the tag of node %s but sits on node %s; a clone of it to %s is refused while its disk is on local storage (can't clone VM to node '%s' (VM uses local storage)): build %s's own template on %s",
				ErrOtherNode, guest(*sel.Template), n, termsafe.Cut(sel.Template.Node), n, n, n, n)
			ns.Error = err.Error()
			ns.Explanation = append(ns.Explanation, err.Error())
			errs = append(errs, fmt.Errorf("node %s: %w", n, err))
		}
		out = append(out, ns)
	}
	return out, errors.Join(errs...)
}
