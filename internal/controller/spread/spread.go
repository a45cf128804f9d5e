// Package spread is the proxmox-network controller's failure domains: it
// keeps a pool that capmoxrender spread over failure domains (one
// MachineDeployment per domain, labelled failuredomains.LabelPool and
// LabelDomain, of a fixed size: failuredomains.AnnotationShare) spread.
// For each such pool it reads its MachineDeployments and, with the
// tenant's own capmox token (the Secret the ProxmoxCluster's
// credentialsRef names), which Proxmox VE nodes are online; it asks
// package failuredomains what to change and writes the domains' replicas,
// each change an Event on its MachineDeployment. Proxmox VE is not
// watched: a pool is looked at every Interval. The token is never logged.
package spread

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/failuredomains"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/heal"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

// Event reasons.
const (
	// ReasonMoved: a domain's replicas were changed.
	ReasonMoved engine.Reason = "FailureDomainReplicasSet"
	// ReasonCannotRead: the pool, its credentials or the nodes' state
	// could not be read, or the pool's annotations disagree; nothing was
	// changed.
	ReasonCannotRead engine.Reason = "FailureDomainsCannotRead"
	// ReasonCannotSet: writing a domain's replicas failed.
	ReasonCannotSet engine.Reason = "CannotSetFailureDomainReplicas"
	// ReasonWaiting: the pool's MachineDeployments do not make a whole
	// pool yet (a render being applied); nothing was changed.
	ReasonWaiting engine.Reason = "FailureDomainsWaiting"
)

// EventActions are the events.k8s.io action of every reason.
var EventActions = map[engine.Reason]string{
	ReasonMoved: "FailureDomains", ReasonCannotRead: "FailureDomains", ReasonCannotSet: "FailureDomains", ReasonWaiting: "FailureDomains",
}

// DefaultInterval is how often a pool is looked at again without a change.
const DefaultInterval = 30 * time.Second

// Reconciler keeps the pool of each MachineDeployment it is given spread.
type Reconciler struct {
	// Client lists and patches MachineDeployments; Reader reads the
	// Cluster, ProxmoxCluster and credentials Secret uncached.
	Client client.Client
	Reader client.Reader
	// Connect builds the Proxmox VE client of a tenant's credentials; nil
	// is pveapi.New.
	Connect func(pveapi.Config) (pveapi.Client, error)
	// Interval is how often a pool is looked at (0: DefaultInterval).
	Interval time.Duration
	Log      logr.Logger
}

var _ engine.Step[*clusterv1.MachineDeployment] = (*Reconciler)(nil)

// Takes says whether md is a domain of a spread pool of a fixed size.
func Takes(md *clusterv1.MachineDeployment) bool {
	_, share := md.Annotations[failuredomains.AnnotationShare]
	return md.DeletionTimestamp.IsZero() && md.Labels[failuredomains.LabelPool] != "" && md.Labels[failuredomains.LabelDomain] != "" && share
}

// Reconcile keeps the pool of md spread.
func (r *Reconciler) Reconcile(ctx context.Context, s *engine.State[*clusterv1.MachineDeployment]) (engine.Result, error) {
	md := s.Object
	if !Takes(md) {
		return engine.Result{}, nil
	}
	res := engine.Result{RequeueAfter: r.interval()}
	pool, err := r.Gather(ctx, md)
	if err != nil {
		s.Event(corev1.EventTypeWarning, ReasonCannotRead, err.Error())
		return engine.Result{}, err
	}
	if pool.Waiting != "" {
		s.Event(corev1.EventTypeNormal, ReasonWaiting, pool.Waiting)
		return res, nil
	}
	for _, c := range failuredomains.Plan(pool.Domains) {
		d := pool.mds[c.Domain]
		if err := r.set(ctx, d, c); err != nil {
			msg := fmt.Sprintf("cannot set the replicas of failure domain %s from %d to %d: %v", c.Domain, c.From, c.To, err)
			s.Recorder.Event(d, corev1.EventTypeWarning, ReasonCannotSet, msg)
			return engine.Result{}, fmt.Errorf("%s", msg)
		}
		s.Recorder.Event(d, corev1.EventTypeNormal, ReasonMoved, fmt.Sprintf("replicas %d to %d: %s", c.From, c.To, c.Reason))
		r.Log.Info("set failure domain replicas", "pool", pool.Name, "domain", c.Domain, "from", c.From, "to", c.To)
	}
	return res, nil
}

func (r *Reconciler) interval() time.Duration {
	if r.Interval > 0 {
		return r.Interval
	}
	return DefaultInterval
}

// Pool is a spread pool as the controller reads it.
type Pool struct {
	// Name is the pool's failuredomains.LabelPool.
	Name    string
	Domains []failuredomains.Domain
	// Waiting, when set, says why the MachineDeployments do not make a
	// whole pool yet; Domains are then not read.
	Waiting string
	mds     map[string]*clusterv1.MachineDeployment
}

// Gather reads the pool of md: its domains' MachineDeployments and the
// state of their Proxmox VE nodes. While they do not make a whole pool (a
// domain's MachineDeployment missing or autoscaled, the domains
// disagreeing on the pool's size or their shares not summing to it: a
// render half applied) it says so in Waiting and reads no further.
func (r *Reconciler) Gather(ctx context.Context, md *clusterv1.MachineDeployment) (*Pool, error) {
	name := md.Labels[failuredomains.LabelPool]
	var list clusterv1.MachineDeploymentList
	if err := r.Client.List(ctx, &list, client.InNamespace(md.Namespace), client.MatchingLabels{failuredomains.LabelPool: name}); err != nil {
		return nil, fmt.Errorf("cannot list the MachineDeployments of pool %s: %w", name, err)
	}
	p := &Pool{Name: name, mds: map[string]*clusterv1.MachineDeployment{}}
	nodes := map[string][]string{}
	var size int32 = -1
	for i := range list.Items {
		d := &list.Items[i]
		if !Takes(d) {
			p.Waiting = fmt.Sprintf("MachineDeployment %s of pool %s is being deleted or has no %s: waiting for the pool's render", d.Name, name, failuredomains.AnnotationShare)
			return p, nil
		}
		dom, n, err := domainOf(d)
		if err != nil {
			return nil, err
		}
		if size >= 0 && n != size {
			p.Waiting = fmt.Sprintf("the MachineDeployments of pool %s disagree on its size (%s): waiting for the pool's render to be applied whole", name, failuredomains.AnnotationSize)
			return p, nil
		}
		size = n
		p.mds[dom.Name] = d
		p.Domains = append(p.Domains, dom)
		nodes[dom.Name] = strings.Split(d.Annotations[failuredomains.AnnotationNodes], ",")
	}
	if len(p.Domains) < 2 || failuredomains.Size(p.Domains) != size {
		p.Waiting = fmt.Sprintf("pool %s has %d MachineDeployment(s) whose shares sum to %d, not its size %d: waiting for the pool's render to be applied whole", name, len(p.Domains), failuredomains.Size(p.Domains), size)
		return p, nil
	}
	slices.SortFunc(p.Domains, func(a, b failuredomains.Domain) int { return strings.Compare(a.Name, b.Name) })
	c, err := heal.TenantClient(ctx, r.Reader, r.Connect, md)
	if err != nil {
		return nil, err
	}
	online, err := onlineNodes(ctx, c)
	if err != nil {
		return nil, err
	}
	for i := range p.Domains {
		p.Domains[i].Online = slices.ContainsFunc(nodes[p.Domains[i].Name], func(n string) bool { return online[n] })
	}
	return p, nil
}

// domainOf is failuredomains' view of one domain's MachineDeployment, and
// the pool's size it records.
func domainOf(md *clusterv1.MachineDeployment) (failuredomains.Domain, int32, error) {
	where := fmt.Sprintf("MachineDeployment %s/%s", md.Namespace, md.Name)
	share, err := strconv.ParseInt(md.Annotations[failuredomains.AnnotationShare], 10, 32)
	if err != nil || share < 0 {
		return failuredomains.Domain{}, 0, fmt.Errorf("%s: annotation %s is not a count of workers", where, failuredomains.AnnotationShare)
	}
	size, err := strconv.ParseInt(md.Annotations[failuredomains.AnnotationSize], 10, 32)
	if err != nil || size < 0 {
		return failuredomains.Domain{}, 0, fmt.Errorf("%s: annotation %s is not a count of workers", where, failuredomains.AnnotationSize)
	}
	if md.Annotations[failuredomains.AnnotationNodes] == "" {
		return failuredomains.Domain{}, 0, fmt.Errorf("%s: annotation %s names no node", where, failuredomains.AnnotationNodes)
	}
	d := failuredomains.Domain{Name: md.Labels[failuredomains.LabelDomain], Share: int32(share)}
	if md.Spec.Replicas != nil {
		d.Replicas = *md.Spec.Replicas
	}
	if md.Status.ReadyReplicas != nil {
		d.Ready = *md.Status.ReadyReplicas
	}
	return d, int32(size), nil
}

// onlineNodes is which Proxmox VE nodes are online, by name.
func onlineNodes(ctx context.Context, c pveapi.Client) (map[string]bool, error) {
	nodes, err := pveapi.ClusterResources(ctx, c, pveapi.Nodes)
	if err != nil {
		return nil, fmt.Errorf("cannot read the Proxmox VE nodes' state: %w", err)
	}
	out := map[string]bool{}
	for _, n := range nodes {
		out[n.Node] = n.Status == "online"
	}
	return out, nil
}

// set writes one domain's replicas, only over the MachineDeployment the
// plan was made from (an optimistic lock: a concurrent change fails the
// write, and the pool is looked at again).
func (r *Reconciler) set(ctx context.Context, md *clusterv1.MachineDeployment, c failuredomains.Change) error {
	patch := client.MergeFromWithOptions(md.DeepCopy(), client.MergeFromWithOptimisticLock{})
	md.Spec.Replicas = &c.To
	return r.Client.Patch(ctx, md, patch)
}
