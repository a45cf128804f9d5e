package pveacl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Snapshot is the access-control state as plain lists, shaped like the
// answers of the Proxmox VE API so that a live reader only has to decode
// them (the JSON tags are PVE's field names):
//
//	Users     GET /access/users?full=1   (tokens and group memberships included)
//	Groups    GET /access/groups         (optional; memberships also come from Users)
//	Roles     GET /access/roles          (special roles are skipped: they come from Version)
//	ACL       GET /access/acl
//	Pools     GET /pools/{poolid}        (one entry per pool, with its members)
//	Resources GET /cluster/resources     (guests and storages, for objects in no pool)
//	Version   GET /version               (the major version)
//
// BuildConfig turns a Snapshot into the Config that ParseUserCfg would have
// produced from the same cluster, and Config.Snapshot goes the other way.
// This is the seam between the pure core and any API client.
type Snapshot struct {
	Version   Version            `json:"version"`
	Users     []SnapshotUser     `json:"users"`
	Groups    []SnapshotGroup    `json:"groups,omitempty"`
	Roles     []SnapshotRole     `json:"roles,omitempty"`
	ACL       []SnapshotACE      `json:"acl,omitempty"`
	Pools     []SnapshotPool     `json:"pools,omitempty"`
	Resources []SnapshotResource `json:"resources,omitempty"`
}

// SnapshotUser is one element of GET /access/users?full=1.
type SnapshotUser struct {
	UserID    string          `json:"userid"`
	Enable    Flag            `json:"enable"`
	Expire    int64           `json:"expire,omitempty"`
	Firstname string          `json:"firstname,omitempty"`
	Lastname  string          `json:"lastname,omitempty"`
	Email     string          `json:"email,omitempty"`
	Comment   string          `json:"comment,omitempty"`
	Keys      string          `json:"keys,omitempty"`
	Groups    List            `json:"groups,omitempty"`
	Tokens    []SnapshotToken `json:"tokens,omitempty"`
}

// SnapshotToken is one token of a user (tokenid is the sub-id).
type SnapshotToken struct {
	TokenID string `json:"tokenid"`
	Expire  int64  `json:"expire,omitempty"`
	Privsep Flag   `json:"privsep"`
	Comment string `json:"comment,omitempty"`
}

// SnapshotGroup is one element of GET /access/groups.
type SnapshotGroup struct {
	GroupID string `json:"groupid"`
	Comment string `json:"comment,omitempty"`
	Users   List   `json:"users,omitempty"`
}

// SnapshotRole is one element of GET /access/roles.
type SnapshotRole struct {
	RoleID  string `json:"roleid"`
	Privs   List   `json:"privs"`
	Special Flag   `json:"special,omitempty"`
}

// SnapshotACE is one element of GET /access/acl.
type SnapshotACE struct {
	Path      string `json:"path"`
	Type      string `json:"type"` // user, group or token
	UGID      string `json:"ugid"`
	RoleID    string `json:"roleid"`
	Propagate Flag   `json:"propagate"`
}

// SnapshotPool is GET /pools/{poolid} with its id.
type SnapshotPool struct {
	PoolID  string               `json:"poolid"`
	Comment string               `json:"comment,omitempty"`
	Members []SnapshotPoolMember `json:"members,omitempty"`
}

// SnapshotPoolMember is one pool member: a guest (qemu, lxc) or a storage.
type SnapshotPoolMember struct {
	Type    string `json:"type"`
	VMID    int    `json:"vmid,omitempty"`
	Storage string `json:"storage,omitempty"`
}

// SnapshotResource is one element of GET /cluster/resources.
type SnapshotResource struct {
	Type    string `json:"type"` // qemu, lxc, storage, node, ...
	VMID    int    `json:"vmid,omitempty"`
	Storage string `json:"storage,omitempty"`
	Pool    string `json:"pool,omitempty"`
}

// Flag reads PVE's booleans, which arrive as 0/1, "0"/"1" or true/false.
type Flag bool

// UnmarshalJSON accepts numbers, strings and booleans.
func (f *Flag) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(bytes.TrimSpace(b)), `"`)
	switch s {
	case "", "0", "false", "null":
		*f = false
	case "1", "true":
		*f = true
	default:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("cannot read %s as a PVE boolean: use 0, 1, true or false", b)
		}
		*f = n != 0
	}
	return nil
}

// MarshalJSON writes 0 or 1, as PVE does.
func (f Flag) MarshalJSON() ([]byte, error) { return []byte(strconv.Itoa(b2i(bool(f)))), nil }

// List reads PVE's lists, which arrive as "a,b" strings or JSON arrays.
type List []string

// UnmarshalJSON accepts a string (split like split_list) or an array.
func (l *List) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*l = SplitList(s)
		return nil
	}
	var a []string
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("cannot read %s as a list: use \"a,b\" or [\"a\",\"b\"]", b)
	}
	*l = a
	return nil
}

// BuildConfig turns API data into a Config. Invalid entries are errors
// (joined), so that a reader never audits a state it misread.
func BuildConfig(s Snapshot) (*Config, error) {
	v := s.Version
	if v == 0 {
		v = DefaultVersion
	}
	if err := v.Validate(); err != nil {
		return nil, fmt.Errorf("cannot build the configuration: %w", err)
	}
	c := NewConfig(v)
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidSnapshot}, args...)...))
	}
	snapshotUsers(c, s, bad)
	snapshotRoles(c, s, bad)
	snapshotPools(c, s, bad)
	for _, a := range s.ACL {
		path, err := NormalizePath(a.Path)
		if err != nil {
			bad("acl entry %s/%s/%s: %v", a.Path, a.UGID, a.RoleID, err)
			continue
		}
		kind := SubjectKind(a.Type)
		if kind != KindUser && kind != KindGroup && kind != KindToken {
			bad("acl entry %s/%s: type %q is not user, group or token", a.Path, a.UGID, a.Type)
			continue
		}
		c.ACL[ACLKey{Path: path, Kind: kind, Subject: a.UGID, Role: a.RoleID}] = bool(a.Propagate)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("cannot build the configuration: %w", errors.Join(errs...))
	}
	return c, nil
}

func snapshotUsers(c *Config, s Snapshot, bad func(string, ...any)) {
	for _, u := range s.Users {
		if !ValidUserID(u.UserID) {
			bad("user %q is not a valid user id", u.UserID)
			continue
		}
		user := User{Enable: bool(u.Enable), Expire: u.Expire, Firstname: u.Firstname, Lastname: u.Lastname,
			Email: u.Email, Comment: u.Comment, Keys: u.Keys, Tokens: map[string]Token{}}
		for _, t := range u.Tokens {
			if ValidTokenName(t.TokenID) != nil {
				bad("token %q of user %s is not a valid token name", t.TokenID, u.UserID)
				continue
			}
			user.Tokens[t.TokenID] = Token{Expire: t.Expire, Privsep: bool(t.Privsep), Comment: t.Comment}
		}
		c.Users[u.UserID] = user
		for _, g := range u.Groups {
			grp := c.Groups[g]
			grp.Members = insertSorted(grp.Members, u.UserID)
			c.Groups[g] = grp
		}
	}
	for _, g := range s.Groups {
		if ValidGroupID(g.GroupID) != nil {
			bad("group %q is not a valid group id", g.GroupID)
			continue
		}
		grp := c.Groups[g.GroupID]
		grp.Comment = g.Comment
		for _, m := range g.Users {
			grp.Members = insertSorted(grp.Members, m)
		}
		c.Groups[g.GroupID] = grp
	}
}

func snapshotRoles(c *Config, s Snapshot, bad func(string, ...any)) {
	for _, r := range s.Roles {
		if bool(r.Special) || IsBuiltinRole(r.RoleID) {
			continue
		}
		if ValidRoleID(r.RoleID) != nil {
			bad("role %q is not a valid role id", r.RoleID)
			continue
		}
		privs, err := ParsePrivileges(c.Version, strings.Join(r.Privs, ","))
		if err != nil {
			bad("role %s: %v", r.RoleID, err)
			continue
		}
		c.Roles[r.RoleID] = Role{Privs: privs}
	}
}

func snapshotPools(c *Config, s Snapshot, bad func(string, ...any)) {
	for _, p := range s.Pools {
		if ValidPoolID(p.PoolID) != nil {
			bad("pool %q is not a valid pool id", p.PoolID)
			continue
		}
		for cur := p.PoolID; cur != ""; cur = poolParent(cur) {
			if _, ok := c.Pools[cur]; !ok {
				c.Pools[cur] = Pool{}
			}
		}
		pool := c.Pools[p.PoolID]
		pool.Comment = p.Comment
		for _, m := range p.Members {
			pool = addMember(pool, m.Type, m.VMID, m.Storage)
		}
		c.Pools[p.PoolID] = pool
	}
	for _, r := range s.Resources {
		switch r.Type {
		case "qemu", "lxc":
			c.Resources.VMs = insertSorted(c.Resources.VMs, r.VMID)
		case "storage":
			c.Resources.Storages = insertSorted(c.Resources.Storages, r.Storage)
		default:
			continue
		}
		if pool, ok := c.Pools[r.Pool]; ok && r.Pool != "" {
			c.Pools[r.Pool] = addMember(pool, r.Type, r.VMID, r.Storage)
		}
	}
}

func addMember(p Pool, typ string, vmid int, storage string) Pool {
	switch typ {
	case "qemu", "lxc":
		p.VMs = insertSorted(p.VMs, vmid)
	case "storage":
		p.Storages = insertSorted(p.Storages, storage)
	}
	return p
}

// Snapshot returns the configuration as API-shaped lists (custom roles
// only; members listed per pool; group memberships in Groups).
func (c *Config) Snapshot() Snapshot {
	s := Snapshot{Version: c.Version}
	for _, id := range sortedKeys(c.Users) {
		u := c.Users[id]
		su := SnapshotUser{UserID: id, Enable: Flag(u.Enable), Expire: u.Expire, Firstname: u.Firstname,
			Lastname: u.Lastname, Email: u.Email, Comment: u.Comment, Keys: u.Keys}
		for _, name := range sortedKeys(u.Tokens) {
			t := u.Tokens[name]
			su.Tokens = append(su.Tokens, SnapshotToken{TokenID: name, Expire: t.Expire, Privsep: Flag(t.Privsep), Comment: t.Comment})
		}
		s.Users = append(s.Users, su)
	}
	for _, id := range sortedKeys(c.Groups) {
		g := c.Groups[id]
		s.Groups = append(s.Groups, SnapshotGroup{GroupID: id, Comment: g.Comment, Users: append(List(nil), g.Members...)})
	}
	for _, id := range sortedKeys(c.Roles) {
		s.Roles = append(s.Roles, SnapshotRole{RoleID: id, Privs: append(List(nil), c.Roles[id].Privs...)})
	}
	for _, a := range c.ACEs() {
		s.ACL = append(s.ACL, SnapshotACE{Path: a.Path, Type: string(a.Kind), UGID: a.Subject, RoleID: a.Role, Propagate: Flag(a.Propagate)})
	}
	for _, id := range sortedKeys(c.Pools) {
		p := c.Pools[id]
		sp := SnapshotPool{PoolID: id, Comment: p.Comment}
		for _, vm := range p.VMs {
			sp.Members = append(sp.Members, SnapshotPoolMember{Type: "qemu", VMID: vm})
		}
		for _, st := range p.Storages {
			sp.Members = append(sp.Members, SnapshotPoolMember{Type: "storage", Storage: st})
		}
		s.Pools = append(s.Pools, sp)
	}
	for _, vm := range c.Resources.VMs {
		s.Resources = append(s.Resources, SnapshotResource{Type: "qemu", VMID: vm})
	}
	for _, st := range c.Resources.Storages {
		s.Resources = append(s.Resources, SnapshotResource{Type: "storage", Storage: st})
	}
	return s
}
