package capmoxrender

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/pxsubstrate/pxsubstrate/failuredomains"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// FailureDomain is one entry of proxmox.failureDomains: a named set of
// Proxmox VE nodes that fail together (a rack, a room, a power feed).
// Without nodes the domain is the one node of its name.
type FailureDomain struct {
	Name  string   `json:"name"`
	Nodes []string `json:"nodes,omitempty"`
}

// The labels and annotations of a pool spread over failure domains
// (package failuredomains names them).
const (
	LabelFailureDomainPool = failuredomains.LabelPool
	LabelFailureDomain     = failuredomains.LabelDomain
	NodeLabelFailureDomain = failuredomains.NodeLabel
)

// spreadPlan is what one domain's MachineDeployment of a spread pool
// carries: the pool it belongs to, the domain, and, for a pool of a fixed
// size, the domain's share and the pool's size.
type spreadPlan struct {
	pool, domain string
	nodes        []string
	share, size  int32
	fixed        bool
}

// planFailureDomains checks proxmox.failureDomains and keeps them on the
// plan: every domain a lowercase DNS label (it names the domain's objects
// and labels them), at least one node each, no node in two domains, every
// node among the cluster's allowedNodes when the lookup knows them, and no
// fewer workers than domains; proxmox.allowedNodes, gpus and ha place the
// workers too and are refused beside it.
func planFailureDomains(ctx context.Context, o Options, p *nodesPlan, s NodesSpec) error {
	fd := s.Proxmox.FailureDomains
	if fd == nil {
		return nil
	}
	if err := failureDomainConflicts(s, len(fd)); err != nil {
		return err
	}
	seen, names := map[string]string{}, map[string]bool{}
	for i, d := range fd {
		f := fmt.Sprintf("proxmox.failureDomains[%d]", i)
		if errs := validation.IsDNS1123Label(d.Name); len(errs) > 0 {
			return refuse(f+".name", "%s.name is %q, which is not a lowercase DNS label (%s): it names the domain's MachineDeployment and is the value of its labels", f, d.Name, strings.Join(errs, "; "))
		}
		if names[d.Name] {
			return refuse(f+".name", "%s.name is %q, which names another domain too: give each domain its own name", f, d.Name)
		}
		names[d.Name] = true
		if err := checkObjectName(f+".name", p.release+"-"+p.group+"-"+d.Name+"-000000"); err != nil {
			return err
		}
		nodes, err := domainNodes(f, d, seen)
		if err != nil {
			return err
		}
		p.domains = append(p.domains, FailureDomain{Name: d.Name, Nodes: nodes})
	}
	if err := failureDomainsKnown(ctx, o, *p); err != nil {
		return err
	}
	return failureDomainsNew(ctx, o, *p)
}

// failureDomainConflicts refuses the fields that place the workers beside
// proxmox.failureDomains, and a pool too small to spread.
func failureDomainConflicts(s NodesSpec, n int) error {
	px := s.Proxmox
	switch {
	case n < 2:
		return refuse("proxmox.failureDomains", "proxmox.failureDomains lists %d domain(s): a pool spreads over two or more; list at least two, or narrow the pool's nodes with proxmox.allowedNodes", n)
	case len(px.AllowedNodes) > 0:
		return refuse("proxmox.allowedNodes", "proxmox.allowedNodes and proxmox.failureDomains both place the workers: the failure domains' nodes are the pool's nodes; remove proxmox.allowedNodes")
	case len(s.GPUs) > 0:
		return refuse("gpus", "gpus places the workers on the nodes of its PCI mapping, which proxmox.failureDomains cannot spread over: remove proxmox.failureDomains, or put the GPU workers in a pool of their own")
	case px.HA:
		return refuse("proxmox.ha", "proxmox.ha restarts a lost node's workers on any other node, out of their failure domain, while proxmox.failureDomains replaces them in the other domains: choose one; remove proxmox.ha or proxmox.failureDomains")
	}
	field, count := "maxReplicas", s.MaxReplicas
	if s.Replicas != nil {
		field, count = "replicas", s.Replicas
	}
	if count == nil {
		count = ptr(int32(10)) // planReplicas' default
	}
	if *count < int32(n) {
		return refuse(field, "%s %d is fewer than the %d failure domains of proxmox.failureDomains: every domain needs at least one worker to spread over; raise %s to at least %d or list fewer domains", field, *count, n, field, n)
	}
	return nil
}

// domainNodes checks one domain's nodes (its name without nodes) and
// records each in seen.
func domainNodes(f string, d FailureDomain, seen map[string]string) ([]string, error) {
	nodes := d.Nodes
	switch {
	case nodes == nil:
		nodes = []string{d.Name}
		if !nodeName.MatchString(d.Name) {
			return nil, refuse(f+".nodes", "%s has no nodes, so it is the node %q, which is not a Proxmox node name: list the domain's nodes", f, d.Name)
		}
	case len(nodes) == 0:
		return nil, refuse(f+".nodes", "%s.nodes is empty: list the domain's Proxmox nodes, or leave nodes out for the one node named %q", f, d.Name)
	}
	for j, n := range nodes {
		nf := fmt.Sprintf("%s.nodes[%d]", f, j)
		if d.Nodes == nil {
			nf = f + ".name"
		}
		if !nodeName.MatchString(n) {
			return nil, refuse(nf, "%s is %q, which is not a Proxmox node name (letters, digits and hyphens)", nf, n)
		}
		if other, ok := seen[n]; ok {
			return nil, refuse(nf, "%s is node %q, which failure domain %q holds too: a node fails with one domain; list it once", nf, n, other)
		}
		seen[n] = d.Name
	}
	return slices.Clone(nodes), nil
}

// failureDomainsKnown refuses a domain's node outside the cluster's
// proxmox.allowedNodes when the lookup knows them; otherwise it warns
// that the nodes were not checked.
func failureDomainsKnown(ctx context.Context, o Options, p nodesPlan) error {
	if o.Clusters == nil {
		o.warnf("proxmox.failureDomains: the cluster's allowedNodes are unknown (pass the Kubernetes object %s/%s with --lookup), so the domains' nodes were not checked against them", p.ns, p.cluster)
		return nil
	}
	cluster, _, err := o.Clusters.AllowedNodes(ctx, p.ns, p.cluster)
	if err != nil {
		return fmt.Errorf("cannot look up Kubernetes %s/%s: %w: %w", p.ns, p.cluster, ErrLookup, err)
	}
	if len(cluster) == 0 {
		return nil
	}
	for i, d := range p.domains {
		for j, n := range d.Nodes {
			if !slices.Contains(cluster, n) {
				return refuse(fmt.Sprintf("proxmox.failureDomains[%d]", i), "proxmox.failureDomains[%d] (%q) holds node %q, which is not in the cluster's proxmox.allowedNodes %v: the domains may only use the cluster's nodes; fix nodes[%d], or add the node to the cluster first",
					i, d.Name, n, termsafe.Cut(fmt.Sprint(cluster)), j)
			}
		}
	}
	return nil
}

// failureDomainsNew refuses to spread a pool that runs as one
// MachineDeployment: its replacement by one per domain would delete every
// worker at once.
func failureDomainsNew(ctx context.Context, o Options, p nodesPlan) error {
	if o.Guards == nil {
		return nil
	}
	md := p.release + "-" + p.group
	kind, found, err := o.Guards.MachineDeploymentInfrastructureKind(ctx, p.ns, md)
	if err != nil {
		return fmt.Errorf("cannot look up MachineDeployment %s/%s: %w: %w", p.ns, md, ErrLookup, err)
	}
	if found && kind != "" {
		return refuse("proxmox.failureDomains", "pool %q runs as the one MachineDeployment %s, and proxmox.failureDomains would replace it by one per domain, deleting its workers all at once: create a new pool with failureDomains and scale this one down", p.group, md)
	}
	return nil
}

// domainPlans are the plans of a spread pool's domains: each narrows the
// pool to its domain's nodes, names its objects <release>-<pool>-<domain>
// and takes its part (failuredomains.Split) of the replicas and of the
// autoscaler's bounds. Capacity annotations describe one worker and stay
// as they are.
func domainPlans(p nodesPlan) []nodesPlan {
	n := len(p.domains)
	mins, maxs := failuredomains.Split(p.minReplicas, n), failuredomains.Split(p.maxReplicas, n)
	out := make([]nodesPlan, n)
	for i, d := range p.domains {
		dp := p
		dp.domains = nil
		dp.group = p.group + "-" + d.Name
		dp.allowedNodes = d.Nodes
		dp.minReplicas, dp.maxReplicas = mins[i], maxs[i]
		dp.spread = &spreadPlan{pool: p.release + "-" + p.group, domain: d.Name, nodes: d.Nodes,
			share: mins[i], size: p.minReplicas, fixed: p.minReplicas == p.maxReplicas}
		out[i] = dp
	}
	return out
}

// renderSpreadPool renders a pool spread over failure domains: the
// TalosConfigTemplate, per domain a ProxmoxMachineTemplate and a
// MachineDeployment (and its earlier templates still in use), one
// MachineHealthCheck over every domain's Machines, and the host-entries
// Job.
func renderSpreadPool(ctx context.Context, p nodesPlan, o Options) ([]*unstructured.Unstructured, error) {
	tct, err := renderTalosConfigTemplate(p)
	if err != nil {
		return nil, err
	}
	out := []*unstructured.Unstructured{tct}
	var kept []*unstructured.Unstructured
	for _, dp := range domainPlans(p) {
		pmt, err := renderMachineTemplate(dp, o)
		if err != nil {
			return nil, err
		}
		md, err := renderMachineDeployment(dp, o, pmt.GetName(), tct.GetName())
		if err != nil {
			return nil, err
		}
		k, err := retainedTemplates(ctx, o.Templates, dp, pmt.GetName())
		if err != nil {
			return nil, err
		}
		out, kept = append(out, pmt, md), append(kept, k...)
	}
	mhc, err := renderMachineHealthCheck(p, o)
	if err != nil {
		return nil, err
	}
	hosts, err := renderHostEntries(p, o, tct.GetName())
	if err != nil {
		return nil, err
	}
	out = append(append(out, mhc), kept...)
	return append(out, hosts...), nil
}

// healthCheckSelector selects the pool's Machines: by their
// MachineDeployment, or, spread over domains, by the pool's label.
func healthCheckSelector(p nodesPlan) map[string]string {
	if len(p.domains) == 0 {
		return poolLabels(p)
	}
	return map[string]string{LabelClusterName: p.release, LabelFailureDomainPool: p.release + "-" + p.group}
}

// spreadLabels are a domain's labels, on its MachineDeployment and its
// Machines (which Cluster API copies NodeLabelFailureDomain from onto the
// Node); nil for a pool without domains.
func spreadLabels(p nodesPlan, machines bool) map[string]string {
	if p.spread == nil {
		return nil
	}
	l := map[string]string{LabelFailureDomainPool: p.spread.pool, LabelFailureDomain: p.spread.domain}
	if machines {
		l[NodeLabelFailureDomain] = p.spread.domain
	}
	return l
}

// spreadAnnotations tell the controller a domain's nodes and, for a pool
// of a fixed size, its share and the pool's size.
func spreadAnnotations(p nodesPlan) map[string]string {
	if p.spread == nil {
		return nil
	}
	a := map[string]string{failuredomains.AnnotationNodes: strings.Join(p.spread.nodes, ",")}
	if p.spread.fixed {
		a[failuredomains.AnnotationShare] = strconv.Itoa(int(p.spread.share))
		a[failuredomains.AnnotationSize] = strconv.Itoa(int(p.spread.size))
	}
	return a
}
