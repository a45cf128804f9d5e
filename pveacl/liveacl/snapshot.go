package liveacl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// errInvalidSnapshot: API data that cannot form a configuration.
var errInvalidSnapshot = errors.New("invalid access-control snapshot")

// snapshot is the access-control state as plain lists, shaped like the
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
// buildConfig turns a snapshot into the Config that usercfg.Parse would have
// produced from the same cluster, and snapshotOf goes the other way.
// This is the seam between the pure core and any API client.
type snapshot struct {
	Version   pveacl.Version     `json:"version"`
	Users     []snapshotUser     `json:"users"`
	Groups    []snapshotGroup    `json:"groups,omitempty"`
	Roles     []snapshotRole     `json:"roles,omitempty"`
	ACL       []snapshotACE      `json:"acl,omitempty"`
	Pools     []snapshotPool     `json:"pools,omitempty"`
	Resources []snapshotResource `json:"resources,omitempty"`
	Volumes   []snapshotVolume   `json:"volumes,omitempty"`
}

// snapshotVolume is one element of GET /nodes/{node}/storage/{storage}/content.
type snapshotVolume struct {
	Storage string `json:"storage"`
	VolID   string `json:"volid"`
	VMID    int    `json:"vmid,omitempty"`
}

// snapshotUser is one element of GET /access/users?full=1.
type snapshotUser struct {
	UserID    string          `json:"userid"`
	Enable    pveFlag         `json:"enable"`
	Expire    int64           `json:"expire,omitempty"`
	Firstname string          `json:"firstname,omitempty"`
	Lastname  string          `json:"lastname,omitempty"`
	Email     string          `json:"email,omitempty"`
	Comment   string          `json:"comment,omitempty"`
	Keys      string          `json:"keys,omitempty"`
	Groups    pveList         `json:"groups,omitempty"`
	Tokens    []snapshotToken `json:"tokens,omitempty"`
}

// snapshotToken is one token of a user (tokenid is the sub-id).
type snapshotToken struct {
	TokenID string  `json:"tokenid"`
	Expire  int64   `json:"expire,omitempty"`
	Privsep pveFlag `json:"privsep"`
	Comment string  `json:"comment,omitempty"`
}

// snapshotGroup is one element of GET /access/groups.
type snapshotGroup struct {
	GroupID string  `json:"groupid"`
	Comment string  `json:"comment,omitempty"`
	Users   pveList `json:"users,omitempty"`
}

// snapshotRole is one element of GET /access/roles.
type snapshotRole struct {
	RoleID  string  `json:"roleid"`
	Privs   pveList `json:"privs"`
	Special pveFlag `json:"special,omitempty"`
}

// snapshotACE is one element of GET /access/acl.
type snapshotACE struct {
	Path      string  `json:"path"`
	Type      string  `json:"type"` // user, group or token
	UGID      string  `json:"ugid"`
	RoleID    string  `json:"roleid"`
	Propagate pveFlag `json:"propagate"`
}

// snapshotPool is GET /pools/{poolid} with its id.
type snapshotPool struct {
	PoolID  string               `json:"poolid"`
	Comment string               `json:"comment,omitempty"`
	Members []snapshotPoolMember `json:"members,omitempty"`
}

// snapshotPoolMember is one pool member: a guest (qemu, lxc) or a storage.
type snapshotPoolMember struct {
	Type    string `json:"type"`
	VMID    int    `json:"vmid,omitempty"`
	Storage string `json:"storage,omitempty"`
}

// snapshotResource is a guest or storage of GET /cluster/resources
// (pveapi.ClusterResource) as a snapshot keeps it.
type snapshotResource struct {
	Type    string `json:"type"` // qemu, lxc, storage, node, ...
	VMID    int    `json:"vmid,omitempty"`
	Storage string `json:"storage,omitempty"`
	Pool    string `json:"pool,omitempty"`
	Node    string `json:"node,omitempty"`
}

// pveFlag reads PVE's booleans, which arrive as 0/1, "0"/"1" or true/false.
type pveFlag bool

// UnmarshalJSON accepts numbers, strings and booleans.
func (f *pveFlag) UnmarshalJSON(b []byte) error {
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
func (f pveFlag) MarshalJSON() ([]byte, error) {
	if f {
		return []byte("1"), nil
	}
	return []byte("0"), nil
}

// pveList reads PVE's lists, which arrive as "a,b" strings or JSON arrays.
type pveList []string

// UnmarshalJSON accepts a string (split like split_list) or an array.
func (l *pveList) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*l = pveacl.SplitList(s)
		return nil
	}
	var a []string
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("cannot read %s as a list: use \"a,b\" or [\"a\",\"b\"]", b)
	}
	*l = a
	return nil
}

// buildConfig turns API data into a Config. Invalid entries are errors
// (joined), so that a reader never audits a state it misread.
func buildConfig(s snapshot) (*pveacl.Config, error) {
	v := s.Version
	if v == 0 {
		v = pveacl.DefaultVersion
	}
	if err := v.Validate(); err != nil {
		return nil, fmt.Errorf("cannot build the configuration: %w", err)
	}
	c := pveacl.NewConfig(v)
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{errInvalidSnapshot}, args...)...))
	}
	snapshotUsers(c, s, bad)
	snapshotRoles(c, s, bad)
	snapshotPools(c, s, bad)
	for _, a := range s.ACL {
		path, err := pveacl.NormalizePath(a.Path)
		if err != nil {
			bad("acl entry %s/%s/%s: %v", a.Path, a.UGID, a.RoleID, err)
			continue
		}
		kind := pveacl.SubjectKind(a.Type)
		if kind != pveacl.KindUser && kind != pveacl.KindGroup && kind != pveacl.KindToken {
			bad("acl entry %s/%s: type %q is not user, group or token", a.Path, a.UGID, a.Type)
			continue
		}
		c.ACL[pveacl.ACLKey{Path: path, Kind: kind, Subject: a.UGID, Role: a.RoleID}] = bool(a.Propagate)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("cannot build the configuration: %w", errors.Join(errs...))
	}
	return c, nil
}

func snapshotUsers(c *pveacl.Config, s snapshot, bad func(string, ...any)) {
	for _, u := range s.Users {
		if !pveacl.ValidUserID(u.UserID) {
			bad("user %q is not a valid user id", u.UserID)
			continue
		}
		user := pveacl.User{Enable: bool(u.Enable), Expire: u.Expire, Firstname: u.Firstname, Lastname: u.Lastname,
			Email: u.Email, Comment: u.Comment, Keys: u.Keys, Tokens: map[string]pveacl.Token{}}
		for _, t := range u.Tokens {
			if pveacl.ValidTokenName(t.TokenID) != nil {
				bad("token %q of user %s is not a valid token name", t.TokenID, u.UserID)
				continue
			}
			user.Tokens[t.TokenID] = pveacl.Token{Expire: t.Expire, Privsep: bool(t.Privsep), Comment: t.Comment}
		}
		c.Users[u.UserID] = user
		for _, g := range u.Groups {
			grp := c.Groups[g]
			grp.AddMember(u.UserID)
			c.Groups[g] = grp
		}
	}
	for _, g := range s.Groups {
		if pveacl.ValidGroupID(g.GroupID) != nil {
			bad("group %q is not a valid group id", g.GroupID)
			continue
		}
		grp := c.Groups[g.GroupID]
		grp.Comment = g.Comment
		for _, m := range g.Users {
			grp.AddMember(m)
		}
		c.Groups[g.GroupID] = grp
	}
}

func snapshotRoles(c *pveacl.Config, s snapshot, bad func(string, ...any)) {
	for _, r := range s.Roles {
		if bool(r.Special) || pveacl.IsBuiltinRole(r.RoleID) {
			continue
		}
		if pveacl.ValidRoleID(r.RoleID) != nil {
			bad("role %q is not a valid role id", r.RoleID)
			continue
		}
		privs, err := pveacl.ParsePrivileges(c.Version, strings.Join(r.Privs, ","))
		if err != nil {
			bad("role %s: %v", r.RoleID, err)
			continue
		}
		c.Roles[r.RoleID] = pveacl.Role{Privs: privs}
	}
}

func snapshotPools(c *pveacl.Config, s snapshot, bad func(string, ...any)) {
	for _, p := range s.Pools {
		if pveacl.ValidPoolID(p.PoolID) != nil {
			bad("pool %q is not a valid pool id", p.PoolID)
			continue
		}
		for cur := p.PoolID; cur != ""; cur = pveacl.PoolParent(cur) {
			if _, ok := c.Pools[cur]; !ok {
				c.Pools[cur] = pveacl.Pool{}
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
			c.Resources.VMs = append(c.Resources.VMs, r.VMID)
		case "storage":
			c.Resources.Storages = append(c.Resources.Storages, r.Storage)
		default:
			continue
		}
		if pool, ok := c.Pools[r.Pool]; ok && r.Pool != "" {
			c.Pools[r.Pool] = addMember(pool, r.Type, r.VMID, r.Storage)
		}
	}
	slices.Sort(c.Resources.VMs)
	c.Resources.VMs = slices.Compact(c.Resources.VMs)
	slices.Sort(c.Resources.Storages)
	c.Resources.Storages = slices.Compact(c.Resources.Storages)
	for _, v := range s.Volumes {
		c.Resources.Volumes = append(c.Resources.Volumes, pveacl.Volume{Storage: v.Storage, VolID: v.VolID, VMID: v.VMID})
	}
}

func addMember(p pveacl.Pool, typ string, vmid int, storage string) pveacl.Pool {
	switch typ {
	case "qemu", "lxc":
		p.AddVM(vmid)
	case "storage":
		p.AddStorage(storage)
	}
	return p
}

// snapshot returns the configuration as API-shaped lists (custom roles
// only; members listed per pool; group memberships in Groups).
func snapshotOf(c *pveacl.Config) snapshot {
	s := snapshot{Version: c.Version}
	for _, id := range slices.Sorted(maps.Keys(c.Users)) {
		u := c.Users[id]
		su := snapshotUser{UserID: id, Enable: pveFlag(u.Enable), Expire: u.Expire, Firstname: u.Firstname,
			Lastname: u.Lastname, Email: u.Email, Comment: u.Comment, Keys: u.Keys}
		for _, name := range slices.Sorted(maps.Keys(u.Tokens)) {
			t := u.Tokens[name]
			su.Tokens = append(su.Tokens, snapshotToken{TokenID: name, Expire: t.Expire, Privsep: pveFlag(t.Privsep), Comment: t.Comment})
		}
		s.Users = append(s.Users, su)
	}
	for _, id := range slices.Sorted(maps.Keys(c.Groups)) {
		g := c.Groups[id]
		s.Groups = append(s.Groups, snapshotGroup{GroupID: id, Comment: g.Comment, Users: append(pveList(nil), g.Members...)})
	}
	for _, id := range slices.Sorted(maps.Keys(c.Roles)) {
		s.Roles = append(s.Roles, snapshotRole{RoleID: id, Privs: append(pveList(nil), c.Roles[id].Privs...)})
	}
	for _, a := range c.ACEs() {
		s.ACL = append(s.ACL, snapshotACE{Path: a.Path, Type: string(a.Kind), UGID: a.Subject, RoleID: a.Role, Propagate: pveFlag(a.Propagate)})
	}
	for _, id := range slices.Sorted(maps.Keys(c.Pools)) {
		p := c.Pools[id]
		sp := snapshotPool{PoolID: id, Comment: p.Comment}
		for _, vm := range p.VMs {
			sp.Members = append(sp.Members, snapshotPoolMember{Type: "qemu", VMID: vm})
		}
		for _, st := range p.Storages {
			sp.Members = append(sp.Members, snapshotPoolMember{Type: "storage", Storage: st})
		}
		s.Pools = append(s.Pools, sp)
	}
	for _, vm := range c.Resources.VMs {
		s.Resources = append(s.Resources, snapshotResource{Type: "qemu", VMID: vm})
	}
	for _, v := range c.Resources.Volumes {
		s.Volumes = append(s.Volumes, snapshotVolume{Storage: v.Storage, VolID: v.VolID, VMID: v.VMID})
	}
	for _, st := range c.Resources.Storages {
		s.Resources = append(s.Resources, snapshotResource{Type: "storage", Storage: st})
	}
	return s
}
