package pveha

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// ErrUnsupported is Plan's refusal of a Proxmox VE without HA resource
// affinity rules (before 9.0).
var ErrUnsupported = errors.New("keeping a pool's workers apart needs HA resource affinity rules, which Proxmox VE has from 9.0 on")

// The marks of what the package writes.
const (
	// ResourceComment starts the comment of each HA resource Plan adds;
	// the Machine's namespace/name follows.
	ResourceComment = "pxsubstrate machine "
	// RuleComment starts the comment of each rule Plan makes; the pool's
	// namespace/name follows.
	RuleComment = "pxsubstrate pool "
	// RulePrefix starts the id of each rule Plan makes.
	RulePrefix = "pxs-"
)

// Worker is one Machine of a pool and the VM capmox made for it (VMID 0
// while there is none yet).
type Worker struct {
	// Machine is the Machine's namespace/name.
	Machine string
	VMID    int
}

// SID is the HA resource id of the worker's VM ("vm:<vmid>").
func (w Worker) SID() string { return SID(w.VMID) }

// SID is the HA resource id of a VM.
func SID(vmid int) string { return "vm:" + strconv.Itoa(vmid) }

// Pool is the workers of one MachineDeployment. When the cluster has fewer
// nodes than the pool has VMs, the first workers are the ones kept apart:
// list them oldest first, so that a new worker never displaces one that
// runs.
type Pool struct {
	// Name is the MachineDeployment's namespace/name.
	Name    string
	Workers []Worker
}

// RuleID is the id of the pool's rule: RulePrefix and twelve hex digits of
// the SHA-256 of its name (a rule id is a pve-configid, which a
// namespace/name is not).
func RuleID(pool string) string {
	sum := sha256.Sum256([]byte(pool))
	return RulePrefix + hex.EncodeToString(sum[:6])
}

// Resource is an entry of GET /cluster/ha/resources.
type Resource struct {
	SID     string `json:"sid"`
	Type    string `json:"type,omitempty"`
	State   string `json:"state,omitempty"`
	Comment string `json:"comment,omitempty"`
}

// Machine is the Machine the package registered the resource for, or ""
// for a resource it did not make.
func (r Resource) Machine() string {
	m, ok := strings.CutPrefix(r.Comment, ResourceComment)
	if !ok {
		return ""
	}
	return m
}

// VMID is the VM of a "vm:" resource, 0 for others.
func (r Resource) VMID() int {
	id, ok := strings.CutPrefix(r.SID, "vm:")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(id)
	if err != nil || n <= 0 || strconv.Itoa(n) != id {
		return 0
	}
	return n
}

// Rule is an entry of GET /cluster/ha/rules.
type Rule struct {
	ID        string `json:"rule"`
	Type      string `json:"type"`
	Affinity  string `json:"affinity,omitempty"`
	Resources string `json:"resources,omitempty"`
	Comment   string `json:"comment,omitempty"`
	Disable   int    `json:"disable,omitempty"`
	// Errors are PVE's reasons the rule is not applied (infeasible).
	Errors map[string]string `json:"errors,omitempty"`
}

// Pool is the pool the package made the rule for, or "".
func (r Rule) Pool() string {
	p, ok := strings.CutPrefix(r.Comment, RuleComment)
	if !ok || !strings.HasPrefix(r.ID, RulePrefix) {
		return ""
	}
	return p
}

// Members is the rule's resources as a sorted set.
func (r Rule) Members() []string {
	var out []string
	for s := range strings.SplitSeq(r.Resources, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// State is a cluster's HA configuration as Read finds it.
type State struct {
	// Release is the Proxmox VE release ("9.1").
	Release string
	// Nodes are the cluster's nodes, and Online those of them online.
	Nodes, Online []string
	Resources     []Resource
	// Rules is nil on Proxmox VE 8.
	Rules []Rule
}

// Major is the major version of Release, 0 when it does not parse.
func (s *State) Major() int {
	major, _, _ := strings.Cut(s.Release, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0
	}
	return n
}

// Read reads the version, the cluster's nodes and the HA resources and
// (on Proxmox VE 9) rules.
func Read(ctx context.Context, c pveapi.Client) (*State, error) {
	var ver struct {
		Release string `json:"release"`
	}
	if err := c.Get(ctx, "/version", &ver); err != nil {
		return nil, fmt.Errorf("cannot read the Proxmox VE version: %w", err)
	}
	st := &State{Release: ver.Release}
	var members []struct {
		Type   string `json:"type"`
		Name   string `json:"name"`
		Online int    `json:"online"`
	}
	if err := c.Get(ctx, "/cluster/status", &members); err != nil {
		return nil, fmt.Errorf("cannot read the cluster's nodes (the token needs Sys.Audit on /): %w", err)
	}
	for _, m := range members {
		if m.Type != "node" {
			continue
		}
		st.Nodes = append(st.Nodes, m.Name)
		if m.Online == 1 {
			st.Online = append(st.Online, m.Name)
		}
	}
	slices.Sort(st.Nodes)
	slices.Sort(st.Online)
	if err := c.Get(ctx, "/cluster/ha/resources", &st.Resources); err != nil {
		return nil, fmt.Errorf("cannot read the HA resources (the token needs Sys.Audit on /): %w", err)
	}
	if st.Major() >= 9 {
		if err := c.Get(ctx, "/cluster/ha/rules", &st.Rules); err != nil {
			return nil, fmt.Errorf("cannot read the HA rules (the token needs Sys.Audit on /): %w", err)
		}
		if st.Rules == nil {
			st.Rules = []Rule{}
		}
	}
	return st, nil
}

// Op is what a Change does.
type Op string

// The changes Plan makes.
const (
	AddResource    Op = "add-resource"
	UpdateResource Op = "update-resource"
	RemoveResource Op = "remove-resource"
	CreateRule     Op = "create-rule"
	UpdateRule     Op = "update-rule"
	DeleteRule     Op = "delete-rule"
)

// Change is one write.
type Change struct {
	Op Op `json:"op"`
	// SID is the HA resource of a resource change.
	SID string `json:"sid,omitempty"`
	// Rule is the rule id of a rule change, and Resources its members.
	Rule      string   `json:"rule,omitempty"`
	Resources []string `json:"resources,omitempty"`
	// Comment is the comment the resource or rule gets.
	Comment string `json:"comment,omitempty"`
	Reason  string `json:"reason"`
}

func (c Change) String() string {
	// The rule, SID and resources may come from the API: cut.
	if c.Rule != "" {
		return fmt.Sprintf("%s %s [%s]: %s", c.Op, termsafe.Cut(c.Rule), termsafe.Cut(strings.Join(c.Resources, ",")), c.Reason)
	}
	return fmt.Sprintf("%s %s: %s", c.Op, termsafe.Cut(c.SID), c.Reason)
}

// Report is what a plan does for one pool.
type Report struct {
	Pool string `json:"pool"`
	// Workers is how many of its Machines have a VM, and Apart how many
	// of those the rule keeps on different nodes: all of them when the
	// cluster has at least as many nodes, else one per node.
	Workers int `json:"workers"`
	Apart   int `json:"apart"`
	Nodes   int `json:"nodes"`
}

// Short reports whether some of the pool's workers are not kept apart.
func (r Report) Short() bool { return r.Apart < r.Workers }

// String says how the pool is kept apart, in a sentence for an Event.
func (r Report) String() string {
	if !r.Short() {
		return fmt.Sprintf("the %d workers of pool %s are HA resources kept on different Proxmox nodes", r.Workers, r.Pool)
	}
	return fmt.Sprintf("pool %s has %d workers and the Proxmox cluster %d nodes: %d workers are kept on different nodes, %d may share a node with them; add Proxmox nodes or shrink the pool",
		r.Pool, r.Workers, r.Nodes, r.Apart, r.Workers-r.Apart)
}

// Plan is the changes that bring a cluster's HA configuration to the
// pools, and a report per pool.
type Plan struct {
	Changes []Change `json:"changes"`
	Pools   []Report `json:"pools"`
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool { return len(p.Changes) == 0 }

// Options change what Plan does.
type Options struct {
	// Prune also removes the HA resources and rules the package made
	// whose Machine or pool is none of the pools given: pass every pool
	// with HA on, or Prune removes the others' resources.
	Prune bool
}

// NewPlan plans the pools on st: each worker's VM an HA resource, and a
// negative resource-affinity rule over the first as many workers as the
// cluster has nodes (a rule over more is infeasible, and PVE ignores all of
// it). A resource the package did not make is left as it is and counted
// in. On Proxmox VE 8 it returns ErrUnsupported.
func NewPlan(st *State, pools []Pool, o Options) (*Plan, error) {
	if st.Major() < 9 {
		return nil, fmt.Errorf("%w: the cluster runs Proxmox VE %s", ErrUnsupported, termsafe.Cut(st.Release))
	}
	b := &planner{st: st, res: map[string]Resource{}, rules: map[string]Rule{}, wanted: map[string]bool{}, wantedRules: map[string]bool{}}
	for _, r := range st.Resources {
		b.res[r.SID] = r
	}
	for _, r := range st.Rules {
		b.rules[r.ID] = r
	}
	p := &Plan{Pools: []Report{}, Changes: []Change{}}
	for _, pool := range slices.SortedFunc(slices.Values(pools), func(a, b Pool) int { return strings.Compare(a.Name, b.Name) }) {
		p.Pools = append(p.Pools, b.pool(pool))
	}
	if o.Prune {
		b.prune()
	}
	p.Changes = append(append(append(p.Changes, b.adds...), b.rulesOut...), b.removes...)
	return p, nil
}

// planner collects a plan's changes: resources added or updated, rules
// made, changed or deleted, resources removed.
type planner struct {
	st                      *State
	res                     map[string]Resource
	rules                   map[string]Rule
	wanted, wantedRules     map[string]bool
	adds, rulesOut, removes []Change
}

// pool plans one pool's resources and rule.
func (b *planner) pool(pool Pool) Report {
	var sids []string
	for _, w := range pool.Workers {
		if w.VMID <= 0 || b.wanted[w.SID()] {
			continue
		}
		sid := w.SID()
		b.wanted[sid] = true
		sids = append(sids, sid)
		comment := ResourceComment + w.Machine
		switch r, ok := b.res[sid]; {
		case !ok:
			b.adds = append(b.adds, Change{Op: AddResource, SID: sid, Comment: comment, Reason: "the VM of Machine " + w.Machine + " is no HA resource"})
		case r.Machine() != "" && r.Machine() != w.Machine:
			b.adds = append(b.adds, Change{Op: UpdateResource, SID: sid, Comment: comment, Reason: "the resource names Machine " + r.Machine() + ", whose VM id Machine " + w.Machine + " now has"})
		}
	}
	id := RuleID(pool.Name)
	b.wantedRules[id] = true
	rep := Report{Pool: pool.Name, Workers: len(sids), Nodes: len(b.st.Nodes)}
	apart := sids[:min(len(sids), len(b.st.Nodes))]
	if len(apart) >= 2 {
		rep.Apart = len(apart)
	}
	b.rule(pool.Name, id, slices.Sorted(slices.Values(apart)))
	return rep
}

// rule plans the pool's rule over members.
func (b *planner) rule(pool, id string, members []string) {
	comment := RuleComment + pool
	cur, have := b.rules[id]
	switch {
	case len(members) < 2 && have:
		b.rulesOut = append(b.rulesOut, Change{Op: DeleteRule, Rule: id, Reason: fmt.Sprintf("pool %s has %d worker VMs: nothing to keep apart", pool, len(members))})
	case len(members) < 2:
	case !have:
		b.rulesOut = append(b.rulesOut, Change{Op: CreateRule, Rule: id, Resources: members, Comment: comment, Reason: "pool " + pool + " has no rule keeping its workers apart"})
	case cur.Type != "resource-affinity" || cur.Affinity != "negative" || cur.Disable != 0 || cur.Comment != comment || !slices.Equal(cur.Members(), members):
		b.rulesOut = append(b.rulesOut, Change{Op: UpdateRule, Rule: id, Resources: members, Comment: comment,
			Reason: fmt.Sprintf("the rule holds [%s] (%s, affinity %s, disable %d), want [%s]", termsafe.Cut(cur.Resources), termsafe.Cut(cur.Type), termsafe.Quote(cur.Affinity), cur.Disable, termsafe.Cut(strings.Join(members, ",")))})
	}
}

// prune plans the removal of what the package made for Machines and pools
// it was not given.
func (b *planner) prune() {
	for _, r := range b.st.Resources {
		if r.Machine() != "" && !b.wanted[r.SID] {
			b.removes = append(b.removes, Change{Op: RemoveResource, SID: r.SID, Reason: "Machine " + r.Machine() + " is gone or its pool has HA off"})
		}
	}
	for _, r := range b.st.Rules {
		if r.Pool() != "" && !b.wantedRules[r.ID] {
			b.rulesOut = append(b.rulesOut, Change{Op: DeleteRule, Rule: r.ID, Reason: "pool " + r.Pool() + " is gone or has HA off"})
		}
	}
}

// Apply sends the plan's changes in order: resources first, so that every
// rule names resources that exist, and the removals last. A failed change
// does not stop the others; the errors are returned together.
func Apply(ctx context.Context, c pveapi.Client, p *Plan) error {
	var errs *multierror.Error
	for _, ch := range p.Changes {
		if err := apply(ctx, c, ch); err != nil {
			errs = multierror.Append(errs, fmt.Errorf("%s: %w", ch, err))
		}
	}
	return errs.ErrorOrNil()
}

func apply(ctx context.Context, c pveapi.Client, ch Change) error {
	switch ch.Op {
	case AddResource:
		return c.Post(ctx, "/cluster/ha/resources", map[string]string{"sid": ch.SID, "state": "started", "comment": ch.Comment}, nil)
	case UpdateResource:
		return c.Put(ctx, pveapi.Path("cluster", "ha", "resources", ch.SID), map[string]string{"comment": ch.Comment}, nil)
	case RemoveResource:
		return c.Delete(ctx, pveapi.Path("cluster", "ha", "resources", ch.SID), nil)
	case CreateRule:
		return c.Post(ctx, "/cluster/ha/rules", ruleForm(ch, true), nil)
	case UpdateRule:
		return c.Put(ctx, pveapi.Path("cluster", "ha", "rules", ch.Rule), ruleForm(ch, false), nil)
	case DeleteRule:
		return c.Delete(ctx, pveapi.Path("cluster", "ha", "rules", ch.Rule), nil)
	}
	return fmt.Errorf("unknown change %q", ch.Op)
}

func ruleForm(ch Change, create bool) map[string]string {
	f := map[string]string{"type": "resource-affinity", "affinity": "negative",
		"resources": strings.Join(ch.Resources, ","), "comment": ch.Comment, "disable": "0"}
	if create {
		f["rule"] = ch.Rule
	}
	return f
}

// Release removes the HA resource of a VM that is about to be destroyed,
// whoever made it, so that qemu-server's destroy does not refuse the VM
// as HA-managed. On Proxmox VE 9 the removal also takes the VM out of
// every rule (purge, its default). It reports whether there was one.
func Release(ctx context.Context, c pveapi.Client, vmid int) (bool, error) {
	var list []Resource
	if err := c.Get(ctx, "/cluster/ha/resources", &list); err != nil {
		return false, fmt.Errorf("cannot read the HA resources (the token needs Sys.Audit on /): %w", err)
	}
	sid := SID(vmid)
	if !slices.ContainsFunc(list, func(r Resource) bool { return r.SID == sid }) {
		return false, nil
	}
	if err := c.Delete(ctx, pveapi.Path("cluster", "ha", "resources", sid), nil); err != nil {
		if strings.Contains(err.Error(), "not HA managed") {
			return false, nil
		}
		return false, fmt.Errorf("cannot remove HA resource %s (the token needs Sys.Console on /): %w", termsafe.Cut(sid), err)
	}
	return true, nil
}
