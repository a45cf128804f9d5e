package tenantplan

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// Op is the kind of a planned change.
type Op string

// The operations of a plan, in the order a plan lists them.
const (
	OpCreateRole     Op = "create-role"
	OpUpdateRole     Op = "update-role"
	OpCreatePool     Op = "create-pool"
	OpCreateUser     Op = "create-user"
	OpEnableUser     Op = "enable-user"
	OpCreateToken    Op = "create-token"
	OpUpdateToken    Op = "update-token"
	OpAddPoolMembers Op = "add-pool-members"
	OpDeleteACL      Op = "delete-acl"
	OpSetACL         Op = "set-acl"
)

// Describe names the operation in words ("create role", "delete pool").
func (o Op) Describe() string {
	if v, ok := opVerbs[o]; ok {
		return v
	}
	return strings.ReplaceAll(string(o), "-", " ")
}

var opVerbs = map[Op]string{OpCreateRole: "create role", OpUpdateRole: "update role", OpCreatePool: "create pool",
	OpCreateUser: "create user", OpEnableUser: "enable user", OpCreateToken: "create token",
	OpUpdateToken: "update token", OpAddPoolMembers: "add pool members", OpDeleteACL: "delete ACL entries",
	OpSetACL: "set ACL entries"}

// Change is one idempotent step of a plan: applying it to a state where it
// already holds changes nothing. The fields used depend on Op:
//
//	create-role, update-role   Role, Privs (the complete list)
//	create-pool                Pool, Comment
//	create-user                User, Comment (enabled, never expiring)
//	enable-user                User
//	create-token               User, Token, Comment (privilege-separated)
//	update-token               User, Token (privilege separation turned on)
//	add-pool-members           Pool, VMs, Storages, AllowMove
//	set-acl, delete-acl        Path, Kind, Subject, Roles, Propagate (set only)
type Change struct {
	Op        Op                 `json:"op"`
	Role      string             `json:"role,omitempty"`
	Privs     []string           `json:"privs,omitempty"`
	Pool      string             `json:"pool,omitempty"`
	User      string             `json:"user,omitempty"`
	Token     string             `json:"token,omitempty"`
	Comment   string             `json:"comment,omitempty"`
	VMs       []int              `json:"vms,omitempty"`
	Storages  []string           `json:"storages,omitempty"`
	AllowMove bool               `json:"allowMove,omitempty"`
	Path      string             `json:"path,omitempty"`
	Kind      pveacl.SubjectKind `json:"kind,omitempty"`
	Subject   string             `json:"subject,omitempty"`
	Roles     []string           `json:"roles,omitempty"`
	Propagate bool               `json:"-"`
	// Reason says why the change is needed.
	Reason string `json:"reason"`
}

// MarshalJSON writes propagate only for set-acl changes.
func (c Change) MarshalJSON() ([]byte, error) {
	type plain Change
	out := struct {
		plain
		Propagate *bool `json:"propagate,omitempty"`
	}{plain: plain(c)}
	if c.Op == OpSetACL {
		p := c.Propagate
		out.Propagate = &p
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Change) UnmarshalJSON(b []byte) error {
	type plain Change
	var in struct {
		plain
		Propagate *bool `json:"propagate,omitempty"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*c = Change(in.plain)
	c.Propagate = in.Propagate != nil && *in.Propagate
	return nil
}

// Option adjusts Plan.
type Option func(*planOptions)

type planOptions struct {
	version   pveacl.Version
	confirmed map[string]bool
}

// WithVersion plans for a Proxmox VE major version, overriding the
// specification's platform.pveVersion.
func WithVersion(v pveacl.Version) Option { return func(o *planOptions) { o.version = v } }

// WithConfirmedRemovals lets the plan remove the other ACL entries of the
// named users and tokens (user@realm, user@realm!token) although they exist
// without the ownership mark: the specification adopts them. Without it
// such a plan fails with ErrUnconfirmedRemoval, listing the entries.
func WithConfirmedRemovals(principals ...string) Option {
	return func(o *planOptions) {
		if o.confirmed == nil {
			o.confirmed = map[string]bool{}
		}
		for _, p := range principals {
			o.confirmed[p] = true
		}
	}
}

// Plan returns the ordered changes that turn observed into what desired
// asks: roles first, then pools (parents before children), users, tokens,
// pool members, the removal of stray ACL entries of managed subjects, and
// the ACL entries (every role and token exists before an entry names it).
// The order is deterministic; applying the plan and planning again gives no
// changes. Pool members are only ever added: VMs the provider creates in a
// tenant pool stay there. A user or token that exists without the
// ownership mark and holds entries outside its tenant is adopted only when
// WithConfirmedRemovals names it; otherwise Plan fails, naming every entry
// it would remove.
func Plan(desired *Tenants, observed *pveacl.Config, opts ...Option) ([]Change, error) {
	spec, v, err := prepare(desired, observed, opts)
	if err != nil {
		return nil, err
	}
	d := buildDesired(spec, v)
	var out []Change
	out = append(out, planRoles(d, observed)...)
	out = append(out, planPools(d, observed)...)
	out = append(out, planUsers(d, observed)...)
	out = append(out, planMembers(d, observed)...)
	acl := planACL(d, observed)
	if err := confirmRemovals(acl, observed, options(opts).confirmed); err != nil {
		return nil, err
	}
	return append(out, acl...), nil
}

func options(opts []Option) planOptions {
	var o planOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// confirmRemovals fails when a delete-acl change takes rights from a user
// or token that exists without the ownership mark and is not confirmed.
func confirmRemovals(changes []Change, obs *pveacl.Config, confirmed map[string]bool) error {
	var unconfirmed []string
	var names []string
	for _, c := range changes {
		if c.Op != OpDeleteACL || confirmed[c.Subject] || createdHere(obs, c.Kind, c.Subject) {
			continue
		}
		unconfirmed = append(unconfirmed, fmt.Sprintf("%s %s: %s on %s", c.Kind, c.Subject, strings.Join(c.Roles, ","), c.Path))
		if !slices.Contains(names, c.Subject) {
			names = append(names, c.Subject)
		}
	}
	if len(unconfirmed) == 0 {
		return nil
	}
	return fmt.Errorf("cannot plan: %w: they exist without the comment %q, so the specification would take them over and remove %s; name another user in the specification, or confirm with --confirm-removals %s (tenantplan.WithConfirmedRemovals)",
		ErrUnconfirmedRemoval, strings.TrimSpace(ownerMark), strings.Join(unconfirmed, "; "), strings.Join(names, ","))
}

// createdHere reports whether the user or token exists with the ownership
// mark. One that does not exist has no entries to remove.
func createdHere(obs *pveacl.Config, kind pveacl.SubjectKind, id string) bool {
	switch kind {
	case pveacl.KindUser:
		u, ok := obs.Users[id]
		return !ok || owned(u.Comment)
	case pveacl.KindToken:
		uid, name, _ := pveacl.ParseTokenID(id)
		t, ok := obs.Users[uid].Tokens[name]
		return !ok || owned(t.Comment)
	}
	return false
}

// prepare defaults and validates a copy of the specification and settles
// the version.
func prepare(desired *Tenants, observed *pveacl.Config, opts []Option) (*Tenants, pveacl.Version, error) {
	if desired == nil {
		return nil, 0, fmt.Errorf("cannot plan: %w: no tenant specification", ErrInvalidSpec)
	}
	spec := desired.Defaulted()
	o := planOptions{version: spec.Platform.PVEVersion}
	for _, opt := range opts {
		opt(&o)
	}
	spec.Platform.PVEVersion = o.version
	if err := spec.Validate(); err != nil {
		return nil, 0, fmt.Errorf("cannot plan: %w", err)
	}
	if observed != nil && observed.Version != 0 && observed.Version != o.version {
		return nil, 0, fmt.Errorf("cannot plan: %w: the observed cluster runs PVE %d but the plan is for PVE %d; set platform.pveVersion (or --pve-version) to %d",
			pveacl.ErrInvalidVersion, int(observed.Version), int(o.version), int(observed.Version))
	}
	return spec, o.version, nil
}

func planRoles(d desiredState, obs *pveacl.Config) []Change {
	var out []Change
	for _, name := range slices.Sorted(maps.Keys(d.roles)) {
		privs := d.roles[name]
		have, ok := obs.Roles[name]
		switch {
		case !ok:
			out = append(out, Change{Op: OpCreateRole, Role: name, Privs: privs, Reason: "the role does not exist"})
		case !slices.Equal(have.Privs, privs):
			out = append(out, Change{Op: OpUpdateRole, Role: name, Privs: privs,
				Reason: fmt.Sprintf("the role holds %s instead", orNone(have.Privs))})
		}
	}
	return out
}

func planPools(d desiredState, obs *pveacl.Config) []Change {
	var out []Change
	for _, name := range slices.Sorted(maps.Keys(d.pools)) {
		if _, ok := obs.Pools[name]; !ok {
			out = append(out, Change{Op: OpCreatePool, Pool: name, Comment: d.pools[name].Comment, Reason: "the pool does not exist"})
		}
	}
	return out
}

func planUsers(d desiredState, obs *pveacl.Config) []Change {
	var out []Change
	for _, id := range slices.Sorted(maps.Keys(d.users)) {
		u, ok := obs.Users[id]
		switch {
		case !ok:
			out = append(out, Change{Op: OpCreateUser, User: id, Comment: d.users[id], Reason: "the user does not exist"})
		case !u.Enable:
			out = append(out, Change{Op: OpEnableUser, User: id, Reason: "the user is disabled, so its tokens are refused"})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(d.tokens)) {
		uid, name, _ := pveacl.ParseTokenID(id)
		t, ok := obs.Users[uid].Tokens[name]
		switch {
		case !ok:
			out = append(out, Change{Op: OpCreateToken, User: uid, Token: name, Comment: d.tokens[id], Reason: "the token does not exist"})
		case !t.Privsep:
			out = append(out, Change{Op: OpUpdateToken, User: uid, Token: name,
				Reason: "the token is not privilege-separated, so it holds every privilege of its user"})
		}
	}
	return out
}

func planMembers(d desiredState, obs *pveacl.Config) []Change {
	vmPool := map[int]string{}
	for name, p := range obs.Pools {
		for _, vm := range p.VMs {
			vmPool[vm] = name
		}
	}
	var out []Change
	for _, name := range slices.Sorted(maps.Keys(d.pools)) {
		want, have := d.pools[name], obs.Pools[name]
		c := Change{Op: OpAddPoolMembers, Pool: name}
		var moved []string
		for _, vm := range want.VMs {
			if _, ok := slices.BinarySearch(have.VMs, vm); ok {
				continue
			}
			c.VMs = append(c.VMs, vm)
			if other, ok := vmPool[vm]; ok {
				c.AllowMove = true
				moved = append(moved, fmt.Sprintf("VM %d is in pool %s", vm, other))
			}
		}
		for _, s := range want.Storages {
			if _, ok := slices.BinarySearch(have.Storages, s); !ok {
				c.Storages = append(c.Storages, s)
			}
		}
		if len(c.VMs)+len(c.Storages) == 0 {
			continue
		}
		c.Reason = "the pool lacks these members"
		if len(moved) > 0 {
			c.Reason += "; " + strings.Join(moved, ", ") + " and moves"
		}
		out = append(out, c)
	}
	return out
}

// aclTarget is one subject on one path with one propagate flag.
type aclTarget struct {
	path      string
	kind      pveacl.SubjectKind
	subject   string
	propagate bool
}

// aclGroup gathers the roles of one target.
type aclGroup struct {
	aclTarget
	roles []string
}

func planACL(d desiredState, obs *pveacl.Config) []Change {
	stray := map[aclTarget][]string{}
	for k := range obs.ACL {
		if !d.managed[subjectRef{k.Kind, k.Subject}] {
			continue
		}
		if _, ok := d.acl[k]; !ok {
			g := aclTarget{path: k.Path, kind: k.Kind, subject: k.Subject}
			stray[g] = append(stray[g], k.Role)
		}
	}
	missing := map[aclTarget][]string{}
	for k, prop := range d.acl {
		if have, ok := obs.ACL[k]; !ok || have != prop {
			g := aclTarget{path: k.Path, kind: k.Kind, subject: k.Subject, propagate: prop}
			missing[g] = append(missing[g], k.Role)
		}
	}
	var out []Change
	for _, g := range sortedGroups(stray) {
		out = append(out, Change{Op: OpDeleteACL, Path: g.path, Kind: g.kind, Subject: g.subject, Roles: g.roles,
			Reason: "a managed subject must hold no other role"})
	}
	for _, g := range sortedGroups(missing) {
		out = append(out, Change{Op: OpSetACL, Path: g.path, Kind: g.kind, Subject: g.subject, Roles: g.roles,
			Propagate: g.propagate, Reason: aclReason(obs, g)})
	}
	return out
}

func aclReason(obs *pveacl.Config, g aclGroup) string {
	for _, r := range g.roles {
		if _, ok := obs.ACL[pveacl.ACLKey{Path: g.path, Kind: g.kind, Subject: g.subject, Role: r}]; ok {
			if g.propagate {
				return "the entry exists with propagate=0"
			}
			return "the entry exists with propagate=1"
		}
	}
	return "the entry does not exist"
}

func sortedGroups(m map[aclTarget][]string) []aclGroup {
	out := make([]aclGroup, 0, len(m))
	for t, roles := range m {
		sort.Strings(roles)
		out = append(out, aclGroup{aclTarget: t, roles: roles})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if c := pveacl.ComparePaths(a.path, b.path); c != 0 {
			return c < 0
		}
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		if a.subject != b.subject {
			return a.subject < b.subject
		}
		return !a.propagate && b.propagate
	})
	return out
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "no privileges"
	}
	return strings.Join(s, ",")
}
