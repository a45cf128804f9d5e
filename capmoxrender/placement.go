package capmoxrender

import (
	"context"
	"fmt"
	"regexp"
	"slices"

	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// planVMIDRange writes the tenant's VM id range (Options.VMIDRanges, by
// proxmox.pool) so capmox clones the pool's VMs inside it; with ranges
// given but none for the pool, Options.Warn says so.
func planVMIDRange(p *nodesPlan, _ NodesSpec, o Options) error {
	r, ok := o.VMIDRanges[p.pool]
	if !ok {
		if o.VMIDRanges != nil {
			o.warnf("proxmox.pool %q is no tenant's pool with a vmIDRange, so capmox picks this pool's VM ids anywhere, and may clone at the id a ProxmoxMachine being deleted still records, whose delete then destroys the new VM (capmox issue 856): give the tenant whose pool it is a vmIDRange, or correct proxmox.pool", p.pool)
		}
		return nil
	}
	if r.Start < MinVMID || r.End > MaxVMID || r.End < r.Start {
		return refuse("vmIDRange", "the VM id range %d-%d of Proxmox pool %q is not within %d-%d with its end at or above its start: fix the tenant's vmIDRange", r.Start, r.End, p.pool, MinVMID, MaxVMID)
	}
	p.vmIDRange = &r
	return nil
}

// checkVMIDRoom checks that the pool's workers fit in its VM id range
// (shared with its tenant's other pools): fewer ids than maxReplicas is
// refused, since capmox cannot clone the rest; fewer than twice as many
// is warned, since a rolling update adds up to maxReplicas workers (the
// MachineDeployment's maxSurge) before it removes old ones.
func checkVMIDRoom(p *nodesPlan, s NodesSpec, o Options) error {
	if p.vmIDRange == nil {
		return nil
	}
	r := *p.vmIDRange
	size := int64(r.End) - int64(r.Start) + 1
	field := "maxReplicas"
	if s.Replicas != nil {
		field = "replicas"
	}
	switch {
	case size < int64(p.maxReplicas):
		return refuse(field, "%s %d: the VM id range %d-%d of Proxmox pool %q holds %d VM id(s), fewer than the pool's workers, so capmox cannot clone the rest: widen the tenant's vmIDRange, or lower %s",
			field, p.maxReplicas, r.Start, r.End, p.pool, size, field)
	case size < 2*int64(p.maxReplicas):
		o.warnf("%s %d: the VM id range %d-%d of Proxmox pool %q holds %d VM id(s), fewer than the %d a rolling update needs (the pool's workers and as many surging new ones, with the tenant's other pools sharing the range): widen the tenant's vmIDRange to at least %d ids",
			field, p.maxReplicas, r.Start, r.End, p.pool, size, 2*p.maxReplicas, 2*p.maxReplicas)
	}
	return nil
}

// planAllowedNodes checks that proxmox.allowedNodes narrows the cluster's
// list (capmox takes a machine's list instead of the cluster's, so a node
// outside it would escape the cluster's placement). Without the cluster's
// object the list is rendered and Options.Warn says it was not checked.
func planAllowedNodes(ctx context.Context, o Options, p nodesPlan, nodes []string) ([]string, error) {
	if len(nodes) == 0 {
		return nil, nil
	}
	seen := map[string]bool{}
	for i, n := range nodes {
		f := fmt.Sprintf("proxmox.allowedNodes[%d]", i)
		if !nodeName.MatchString(n) {
			return nil, refuse(f, "%s is %q, which is not a Proxmox node name (letters, digits and hyphens)", f, n)
		}
		if seen[n] {
			return nil, refuse(f, "%s is %q, which is listed twice: list each node once", f, n)
		}
		seen[n] = true
	}
	if o.Clusters == nil {
		o.warnf("proxmox.allowedNodes %v: the cluster's allowedNodes are unknown (pass the Kubernetes object %s/%s with --lookup), so the pool's nodes were not checked against them", termsafe.Cut(fmt.Sprint(nodes)), p.ns, p.cluster)
		return slices.Clone(nodes), nil
	}
	cluster, found, err := o.Clusters.AllowedNodes(ctx, p.ns, p.cluster)
	if err != nil {
		return nil, fmt.Errorf("cannot look up Kubernetes %s/%s: %w: %w", p.ns, p.cluster, ErrLookup, err)
	}
	if !found {
		o.warnf("proxmox.allowedNodes %v: the lookup holds no Kubernetes %s/%s, so the pool's nodes were not checked against the cluster's allowedNodes", termsafe.Cut(fmt.Sprint(nodes)), p.ns, p.cluster)
	}
	for i, n := range nodes {
		if len(cluster) > 0 && !slices.Contains(cluster, n) {
			return nil, refuse(fmt.Sprintf("proxmox.allowedNodes[%d]", i), "proxmox.allowedNodes[%d] is %q, which is not in the cluster's proxmox.allowedNodes %v: a pool may only narrow its cluster's nodes; pick from those, or add the node to the cluster first", i, n, cluster)
		}
	}
	return slices.Clone(nodes), nil
}

// nodeName is a Proxmox node name (pve-node: a DNS label).
var nodeName = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$`)
