package pveacl

import (
	"slices"
	"sort"
	"strings"
)

// SubjectKind is the kind of an ACL subject, spelled as GET /access/acl does.
type SubjectKind string

// Subject kinds.
const (
	KindUser  SubjectKind = "user"
	KindGroup SubjectKind = "group"
	KindToken SubjectKind = "token"
)

// Config is the access-control state of a Proxmox VE cluster: the content
// of /etc/pve/user.cfg plus the objects the cluster knows beyond pool
// members. It is plain data; build an Evaluator to ask questions about it.
type Config struct {
	// Version selects the privilege table and the built-in roles.
	Version Version
	// Users by user id (user@realm).
	Users map[string]User
	// Groups by group id.
	Groups map[string]Group
	// Roles holds the custom roles only; built-in roles come from Version.
	Roles map[string]Role
	// Pools by pool id; nested pools are named parent/child.
	Pools map[string]Pool
	// ACL maps an entry to its propagate flag.
	ACL map[ACLKey]bool
	// Resources lists guests and storages of the cluster, whether or not
	// they are pool members (user.cfg alone does not know them).
	Resources Resources
}

// User is a user line of user.cfg with its tokens.
type User struct {
	Enable    bool
	Expire    int64
	Firstname string
	Lastname  string
	Email     string
	Comment   string
	Keys      string
	// Tokens by token sub-id.
	Tokens map[string]Token
}

// Token is an API token of a user.
type Token struct {
	Expire  int64
	Privsep bool
	Comment string
}

// Group is a user group; members may name users that do not exist.
type Group struct {
	Members []string // sorted, unique
	Comment string
}

// AddMember adds a user id to the group, keeping Members sorted and unique.
func (g *Group) AddMember(userID string) { g.Members = insertSorted(g.Members, userID) }

// Role is a custom role.
type Role struct {
	Privs []string // sorted, unique, valid for the config's version
}

// Pool is a resource pool and its members.
type Pool struct {
	Comment  string
	VMs      []int    // sorted, unique
	Storages []string // sorted, unique
}

// AddVM adds a guest to the pool, keeping VMs sorted and unique.
func (p *Pool) AddVM(id int) { p.VMs = insertSorted(p.VMs, id) }

// AddStorage adds a storage to the pool, keeping Storages sorted and unique.
func (p *Pool) AddStorage(id string) { p.Storages = insertSorted(p.Storages, id) }

// ACLKey identifies an ACL entry: one role for one subject on one path.
type ACLKey struct {
	Path    string // normalised
	Kind    SubjectKind
	Subject string // user id, group id or full token id
	Role    string
}

// ACE is an ACL entry with its propagate flag.
type ACE struct {
	ACLKey
	Propagate bool
}

// Resources are cluster objects known from /cluster/resources (or listed by
// hand), used by the audit to find objects outside every pool.
type Resources struct {
	VMs      []int
	Storages []string
	// Volumes are the volumes of the storages, from GET
	// /nodes/{node}/storage/{storage}/content.
	Volumes []Volume
}

// Volume is one volume of a storage; VMID is the guest that owns it (0 for
// ISO images, templates of containers, snippets).
type Volume struct {
	Storage string
	VolID   string
	VMID    int
}

// NewConfig returns an empty configuration for version v with root@pam, as
// PVE's parser always adds it.
func NewConfig(v Version) *Config {
	c := &Config{Version: v, Users: map[string]User{}, Groups: map[string]Group{},
		Roles: map[string]Role{}, Pools: map[string]Pool{}, ACL: map[ACLKey]bool{}}
	c.forceDefaults()
	return c
}

func (c *Config) forceDefaults() {
	if _, ok := c.Users["root@pam"]; !ok {
		c.Users["root@pam"] = User{Enable: true}
	}
}

// Clone returns a deep copy.
func (c *Config) Clone() *Config {
	n := &Config{Version: c.Version, Users: make(map[string]User, len(c.Users)),
		Groups: make(map[string]Group, len(c.Groups)), Roles: make(map[string]Role, len(c.Roles)),
		Pools: make(map[string]Pool, len(c.Pools)), ACL: make(map[ACLKey]bool, len(c.ACL)),
		Resources: Resources{VMs: slices.Clone(c.Resources.VMs), Storages: slices.Clone(c.Resources.Storages),
			Volumes: slices.Clone(c.Resources.Volumes)}}
	for k, u := range c.Users {
		toks := make(map[string]Token, len(u.Tokens))
		for tk, t := range u.Tokens {
			toks[tk] = t
		}
		u.Tokens = toks
		n.Users[k] = u
	}
	for k, g := range c.Groups {
		g.Members = slices.Clone(g.Members)
		n.Groups[k] = g
	}
	for k, r := range c.Roles {
		r.Privs = slices.Clone(r.Privs)
		n.Roles[k] = r
	}
	for k, p := range c.Pools {
		p.VMs = slices.Clone(p.VMs)
		p.Storages = slices.Clone(p.Storages)
		n.Pools[k] = p
	}
	for k, v := range c.ACL {
		n.ACL[k] = v
	}
	return n
}

// Token returns the token with a full id, and whether it exists.
func (c *Config) Token(tokenID string) (Token, bool) {
	uid, name, err := ParseTokenID(tokenID)
	if err != nil {
		return Token{}, false
	}
	t, ok := c.Users[uid].Tokens[name]
	return t, ok
}

// ACEs returns the ACL entries sorted by path (tree order), kind, subject
// and role.
func (c *Config) ACEs() []ACE {
	out := make([]ACE, 0, len(c.ACL))
	for k, p := range c.ACL {
		out = append(out, ACE{ACLKey: k, Propagate: p})
	}
	sort.Slice(out, func(i, j int) bool { return aceLess(out[i].ACLKey, out[j].ACLKey) })
	return out
}

func aceLess(a, b ACLKey) bool {
	if a.Path != b.Path {
		return pathLess(a.Path, b.Path)
	}
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.Subject != b.Subject {
		return a.Subject < b.Subject
	}
	return a.Role < b.Role
}

// ComparePaths orders ACL paths the way a depth-first walk of the ACL tree
// with sorted children visits them: component by component, a parent before
// its children. It returns -1, 0 or +1, for slices.SortFunc.
func ComparePaths(a, b string) int {
	switch {
	case pathLess(a, b):
		return -1
	case pathLess(b, a):
		return 1
	}
	return 0
}

// pathLess orders paths as a depth-first walk of the ACL tree with sorted
// children visits them: component by component, a parent before its
// children.
func pathLess(a, b string) bool {
	a, b = strings.Trim(a, "/"), strings.Trim(b, "/")
	for a != "" && b != "" {
		ca, ra, _ := strings.Cut(a, "/")
		cb, rb, _ := strings.Cut(b, "/")
		if ca != cb {
			return ca < cb
		}
		a, b = ra, rb
	}
	return a == "" && b != ""
}

// PoolsOfVM returns the pools that list a VM (one, unless the config was
// built by hand against PVE's rules).
func (c *Config) PoolsOfVM(id int) []string {
	var out []string
	for name, p := range c.Pools {
		if _, ok := slices.BinarySearch(p.VMs, id); ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// GroupsOf returns the groups that list a user as a member, sorted.
func (c *Config) GroupsOf(userID string) []string {
	var out []string
	for name, g := range c.Groups {
		if _, ok := slices.BinarySearch(g.Members, userID); ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// insertSorted adds v to a sorted slice unless present.
func insertSorted[T interface{ ~int | ~string }](s []T, v T) []T {
	i, ok := slices.BinarySearch(s, v)
	if ok {
		return s
	}
	return slices.Insert(s, i, v)
}
