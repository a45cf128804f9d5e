// Package failuredomains decides how a worker pool spread over failure
// domains (sets of Proxmox VE nodes, each with a MachineDeployment of its
// own) stays spread: Split divides the pool's counts evenly over its
// domains, and Plan says which domain's replicas to change when a domain
// is lost or comes back.
//
// Plan is pure: it takes each domain's share, its replicas, how many of
// its workers are ready and whether any of its nodes is online, and
// returns the changes. The caller (the proxmox-network controller)
// gathers the domains and writes the replicas.
//
// What it never does: lower a domain before every online domain runs its
// even share (a returning domain surges first, so a rebalance never takes
// the pool below its size); raise a domain none of whose nodes is online;
// change anything when no domain is online.
package failuredomains

import (
	"cmp"
	"fmt"
	"slices"
)

// The labels and annotations capmoxrender writes on each domain's
// MachineDeployment (and, for the labels, on its Machines).
const (
	// LabelPool names the pool a domain's MachineDeployment belongs to:
	// <release>-<pool>, the name the pool's MachineDeployment would have
	// without domains. The pool's MachineHealthCheck selects by it.
	LabelPool = "proxmox.cozystack.io/failure-domain-pool"
	// LabelDomain is the domain's name.
	LabelDomain = "proxmox.cozystack.io/failure-domain"
	// NodeLabel is the domain's name on the Machines in Cluster API's
	// node.cluster.x-k8s.io domain, which Cluster API copies onto each
	// Node: a topology key for the tenant's workloads.
	NodeLabel = "node.cluster.x-k8s.io/failure-domain"
	// AnnotationNodes lists the domain's Proxmox nodes, comma-separated.
	AnnotationNodes = "proxmox.cozystack.io/failure-domain-nodes"
	// AnnotationShare is the domain's replicas while every domain is
	// online; only a pool of a fixed size has it.
	AnnotationShare = "proxmox.cozystack.io/failure-domain-share"
	// AnnotationSize is the pool's size, the sum of its domains' shares.
	AnnotationSize = "proxmox.cozystack.io/failure-domain-pool-size"
)

// Split divides total over n parts as evenly as integers allow: each part
// is total/n rounded down or up, the larger parts first, and the parts sum
// to total. n < 1 gives nil.
func Split(total int32, n int) []int32 {
	if n < 1 {
		return nil
	}
	out := make([]int32, n)
	base, extra := total/int32(n), total%int32(n)
	for i := range out {
		out[i] = base
		if int32(i) < extra {
			out[i]++
		}
	}
	return out
}

// Domain is one failure domain of a pool as the controller reads it.
type Domain struct {
	// Name is the domain's name (LabelDomain).
	Name string
	// Share is its replicas while every domain of the pool is online
	// (AnnotationShare).
	Share int32
	// Replicas is its MachineDeployment's spec.replicas; Ready how many
	// of its workers are ready (status.readyReplicas).
	Replicas, Ready int32
	// Online says whether any node of the domain is online.
	Online bool
}

// Change sets one domain's replicas.
type Change struct {
	Domain   string
	From, To int32
	// Reason says why, in a sentence fit for an Event.
	Reason string
}

// Size is the pool's size: the sum of its domains' shares.
func Size(domains []Domain) int32 {
	var n int32
	for _, d := range domains {
		n += d.Share
	}
	return n
}

// Targets are the replicas each domain settles at, by name: its share
// when every domain is online; otherwise 0 for an offline domain and the
// pool's size split evenly (Split) over the online ones, the larger parts
// to the domains of larger share, then by name. With no domain online it
// is nil: there is nowhere to run.
func Targets(domains []Domain) map[string]int32 {
	online := slices.DeleteFunc(slices.Clone(domains), func(d Domain) bool { return !d.Online })
	if len(online) == 0 {
		return nil
	}
	out := make(map[string]int32, len(domains))
	if len(online) == len(domains) {
		for _, d := range domains {
			out[d.Name] = d.Share
		}
		return out
	}
	for _, d := range domains {
		out[d.Name] = 0
	}
	slices.SortFunc(online, func(a, b Domain) int {
		return cmp.Or(cmp.Compare(b.Share, a.Share), cmp.Compare(a.Name, b.Name))
	})
	for i, n := range Split(Size(domains), len(online)) {
		out[online[i].Name] = n
	}
	return out
}

// Plan returns the changes that move the pool towards Targets, in the
// domains' order: an offline domain goes to 0 at once (its workers are
// not running, and a MachineSet would only try to clone on its offline
// nodes); an online domain below its target is raised at once; an online
// domain above its target is lowered only when every online domain has at
// least its target ready, so the workers it gives up already run
// elsewhere; and while some online domain is short, a domain being
// lowered is raised back to the workers it still runs.
func Plan(domains []Domain) []Change {
	t := Targets(domains)
	if t == nil {
		return nil
	}
	settled := !slices.ContainsFunc(domains, func(d Domain) bool { return d.Online && d.Ready < t[d.Name] })
	size := Size(domains)
	var out []Change
	for _, d := range domains {
		to := t[d.Name]
		hold := d.Online && !settled && d.Ready > to
		if hold {
			to = d.Ready
		}
		c := Change{Domain: d.Name, From: d.Replicas, To: to}
		switch {
		case d.Replicas == to:
			continue
		case !d.Online:
			c.Reason = fmt.Sprintf("every node of failure domain %s is offline: its workers are replaced in the other domains", d.Name)
		case d.Replicas < to && hold:
			c.Reason = fmt.Sprintf("failure domain %s keeps its %d running workers while another domain is short of its share", d.Name, to)
		case d.Replicas < to:
			c.Reason = fmt.Sprintf("failure domain %s takes its even share of the pool's %d workers", d.Name, size)
		case settled:
			c.Reason = fmt.Sprintf("every online failure domain runs its share of the pool's %d workers: %s gives back its extra ones", size, d.Name)
		default:
			continue
		}
		out = append(out, c)
	}
	return out
}
