package capmoxrender

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/samber/lo"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Templates on each node's local storage (proxmox.localTemplates).
//
// capmox selects one template cluster-wide by its tag set and clones it
// on the node its scheduler picks; a template on one node's local storage
// cannot be cloned to another node (qemu-server: "can't clone VM to node
// '<node>' (VM uses local storage)"). With proxmox.localTemplates the
// pool's nodes each hold their own template, tagged with the shared tags
// and the node's capmox.NodeTag, and the pool becomes one
// MachineDeployment per node: named <release>-<pool>-<node>, its machines
// pinned to the node (allowedNodes: [node]) and selecting the node's
// template (templateTags and the node's tag), so every clone is made on
// the node of its template, a linked clone on the template's storage.

// planLocalTemplates checks a pool's node tags and, with
// proxmox.localTemplates, what the pool is spread over: its nodes (its
// proxmox.allowedNodes, else its cluster's), which must be named, name
// valid objects, and each take at least one worker of maxReplicas.
func planLocalTemplates(ctx context.Context, o Options, p *nodesPlan, s NodesSpec) error {
	px := s.Proxmox
	if i, bad := capmox.MismatchedNodeTag(px.TemplateTags, ""); bad {
		f := fmt.Sprintf("proxmox.templateTags[%d]", i)
		if px.LocalTemplates {
			return refuse(f, "%s is %q, a node tag: with proxmox.localTemplates the render adds each node's tag (%s) to the MachineDeployment of that node; leave it out of templateTags", f, px.TemplateTags[i], capmox.NodeTag("<node>"))
		}
		return refuse(f, "%s is %q, the tag of a template on one node's local storage: capmox may place a worker on any node and cannot clone that template to another; set proxmox.localTemplates: true and leave the node tag out of templateTags (the render adds each node's)", f, px.TemplateTags[i])
	}
	if !px.LocalTemplates {
		return nil
	}
	switch {
	case len(s.GPUs) > 0:
		return refuse("proxmox.localTemplates", "proxmox.localTemplates cannot be combined with gpus: a GPU pool is placed on the nodes whose PCI mapping holds its devices and selects its template by the GPU tag alone; build the GPU template on shared storage, or give the GPUs a pool of their own")
	case len(px.FailureDomains) > 0:
		return refuse("proxmox.localTemplates", "proxmox.localTemplates cannot be combined with proxmox.failureDomains: a failure domain's MachineDeployment lets capmox pick any node of the domain, and a template on one node's local storage cannot be cloned to another; keep one of the two (local templates already give each node a MachineDeployment of its own)")
	case px.HA:
		return refuse("proxmox.ha", "proxmox.ha cannot be combined with proxmox.localTemplates: Proxmox VE HA recovers a VM on another node, and a linked clone on one node's local storage cannot start anywhere else; turn one of the two off")
	}
	nodes, field, err := localNodes(ctx, o, *p)
	if err != nil {
		return err
	}
	seen := map[string]int{}
	for i, n := range nodes {
		f := field
		if field == "proxmox.allowedNodes" {
			f = fmt.Sprintf("%s[%d]", field, i)
		}
		l := strings.ToLower(n)
		if j, ok := seen[l]; ok {
			return refuse(f, "%s: nodes %q and %q differ only in case, and would get one template tag and one MachineDeployment name (%s); list each node once", f, nodes[j], n, capmox.NodeTag(n))
		}
		seen[l] = i
		if err := checkObjectName(f, p.release+"-"+p.group+"-"+l+"-000000"); err != nil {
			return err
		}
	}
	if int(p.maxReplicas) < len(nodes) {
		f := "maxReplicas"
		if s.Replicas != nil {
			f = "replicas"
		}
		return refuse(f, "%s %d is fewer than the %d nodes proxmox.localTemplates spreads the pool over (%s): each node's MachineDeployment needs room for a worker; raise %s to at least %d, or list fewer nodes in proxmox.allowedNodes",
			f, p.maxReplicas, len(nodes), termsafe.Cut(strings.Join(nodes, ", ")), f, len(nodes))
	}
	p.localNodes = slices.SortedFunc(slices.Values(nodes), func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	return nil
}

// localNodes are the nodes of a pool with local templates, and the field
// that names them: the pool's proxmox.allowedNodes (already checked), else
// its cluster's, read through Options.Clusters.
func localNodes(ctx context.Context, o Options, p nodesPlan) ([]string, string, error) {
	if len(p.allowedNodes) > 0 {
		return p.allowedNodes, "proxmox.allowedNodes", nil
	}
	const f = "proxmox.localTemplates"
	if o.Clusters == nil {
		return nil, f, refuse(f, "proxmox.localTemplates needs the nodes that hold a template: list them in proxmox.allowedNodes, or pass the Kubernetes object %s/%s (--lookup) whose proxmox.allowedNodes lists them", p.ns, p.cluster)
	}
	nodes, found, err := o.Clusters.AllowedNodes(ctx, p.ns, p.cluster)
	if err != nil {
		return nil, f, fmt.Errorf("cannot look up Kubernetes %s/%s: %w: %w", p.ns, p.cluster, ErrLookup, err)
	}
	if !found || len(nodes) == 0 {
		return nil, f, refuse(f, "proxmox.localTemplates needs the nodes that hold a template, and neither the pool nor its cluster %s/%s lists them (an empty proxmox.allowedNodes means every node, which the render cannot enumerate): list them in the pool's proxmox.allowedNodes", p.ns, p.cluster)
	}
	for i, n := range nodes {
		if !nodeName.MatchString(n) {
			return nil, f, refuse(f, "the cluster's proxmox.allowedNodes[%d] is %q, which is not a Proxmox node name (letters, digits and hyphens): fix the Kubernetes object %s/%s, or list the pool's nodes in proxmox.allowedNodes", i, n, p.ns, p.cluster)
		}
		if slices.Contains(nodes[:i], n) {
			return nil, f, refuse(f, "the cluster's proxmox.allowedNodes[%d] is %q, which is listed twice: fix the Kubernetes object %s/%s, or list the pool's nodes in proxmox.allowedNodes", i, n, p.ns, p.cluster)
		}
	}
	return slices.Clone(nodes), f, nil
}

// poolParts is what a pool renders a MachineDeployment for: the pool
// itself, or with local templates one part per node (localParts).
func poolParts(p nodesPlan) []nodesPlan {
	if p.localNodes == nil {
		return []nodesPlan{p}
	}
	return localParts(p)
}

// localParts splits a pool with local templates into one plan per node, in
// the order of p.localNodes: the part's group is <pool>-<node> (in lower
// case), its machines may only use the node, its template tags are the
// pool's and the node's tag, and its minReplicas and maxReplicas are its
// shares of the pool's (SplitReplicas), so the parts' sums are the pool's.
// Everything else (size, disk, network, Talos, health checks, the capacity
// annotations, which describe one worker) is the pool's.
func localParts(p nodesPlan) []nodesPlan {
	k := len(p.localNodes)
	mins, maxs := SplitReplicas(p.minReplicas, k), SplitReplicas(p.maxReplicas, k)
	return lo.Map(p.localNodes, func(node string, i int) nodesPlan {
		q := p
		q.localNodes = nil
		q.group = p.group + "-" + strings.ToLower(node)
		q.allowedNodes = []string{node}
		q.tags = append(slices.Clone(p.tags), capmox.NodeTag(node))
		q.minReplicas, q.maxReplicas = mins[i], maxs[i]
		return q
	})
}

// SplitReplicas splits n workers over k parts as evenly as they go: each
// part gets n/k, and the first n%k parts one more, so the parts sum to n
// and differ by one at most. Split this way, a smaller n never gives a
// part more than a larger n gives it, so a pool's minimum split part by
// part stays at or below its maximum split. k must be at least 1.
func SplitReplicas(n int32, k int) []int32 {
	out := make([]int32, k)
	q, r := n/int32(k), int(n%int32(k))
	for i := range out {
		out[i] = q
		if i < r {
			out[i]++
		}
	}
	return out
}
