package pvefake

import (
	"fmt"
	"slices"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// The seeding methods below set state directly, without permission checks
// and without counting as requests. They fail with PVE's message where the
// API would refuse the same thing.

// AddNode adds a cluster node.
func (srv *Server) AddNode(name string) error {
	return srv.withState(func(s *state) error {
		if !nodeNameRe.MatchString(name) {
			return fmt.Errorf("cannot add node %q: value does not look like a valid node name", name)
		}
		if _, ok := s.nodes[name]; ok {
			return fmt.Errorf("cannot add node %q: it exists", name)
		}
		s.nodes[name] = &node{name: name, id: len(s.nodes) + 1, ip: fmt.Sprintf("192.0.2.%d", len(s.nodes)+1),
			maxCPU: 16, maxMem: 64 << 30}
		return nil
	})
}

// SetNodeMemory sets a node's physical memory in bytes (64 GiB unless set):
// memory.total of GET /nodes/{node}/status, maxmem of GET /nodes and of the
// node in /cluster/resources. Schedulers that reserve memory (capmox
// subtracts the maxmem of the node's guests from memory.total) can then be
// driven to a node that is full.
func (srv *Server) SetNodeMemory(name string, total uint64) error {
	return srv.withState(func(s *state) error {
		n, ok := s.nodes[name]
		if !ok {
			return fmt.Errorf("cannot set the memory of node %q: no such cluster node", name)
		}
		if total == 0 {
			return fmt.Errorf("cannot set the memory of node %q to 0 bytes", name)
		}
		n.maxMem = total
		return nil
	})
}

// StorageSpec describes a storage of storage.cfg. POST /storage builds
// one from its parameters and adds it the way AddStorage does.
type StorageSpec struct {
	ID   string
	Type string // dir, nfs, lvmthin, rbd, zfspool, ... (default dir)
	// Content lists the content types (images, rootdir, iso, vztmpl,
	// import, backup, snippets). Nil is the type's default for dir, lvm,
	// lvmthin and nfs (images,rootdir; images; images,rootdir; images),
	// as pve-storage's parse_config reads a section without content.
	Content []string
	// Shared marks the storage shared; nfs, cifs, rbd, cephfs, iscsi,
	// iscsidirect, zfs and pbs storages are shared whatever it says
	// (Plugin.pm's @SHARED_STORAGE).
	Shared bool
	// Nodes restricts the storage to some nodes (default: all).
	Nodes []string
	// Total is the capacity in bytes (default 1 TiB).
	Total uint64
	// Disabled is storage.cfg's disable flag: the storage is on no node.
	Disabled bool
	// Path is where a file-based storage keeps its files (default
	// /var/lib/vz for local, /mnt/pve/<id> for the others).
	Path string
	// VGName and ThinPool are an lvm or lvmthin storage's volume group and
	// thin pool (default pve and data, the installer's local-lvm).
	VGName, ThinPool string
	// Server and Export are an nfs storage's.
	Server, Export string
}

// AddStorage adds a storage.
func (srv *Server) AddStorage(spec StorageSpec) error {
	return srv.withState(func(s *state) error {
		if err := pveacl.ValidStorageID(spec.ID); err != nil {
			return fmt.Errorf("cannot add storage: %w", err)
		}
		for _, c := range spec.Content {
			if !containsStr(contentTypes, c) {
				return fmt.Errorf("cannot add storage %s: content type '%s' is not one of %v", spec.ID, c, contentTypes)
			}
		}
		if err := s.addStorage(spec); err != nil {
			return fmt.Errorf("cannot add storage: %w", err)
		}
		return nil
	})
}

// addStorage adds a section to storage.cfg: AddStorage and POST /storage
// both end here, so a storage made either way is the same record.
func (s *state) addStorage(spec StorageSpec) error {
	if _, ok := s.stores[spec.ID]; ok {
		return fmt.Errorf("storage ID '%s' already defined", spec.ID)
	}
	st := &storage{id: spec.ID, typ: spec.Type, content: map[string]bool{}, shared: spec.Shared,
		nodes: slices.Clone(spec.Nodes), total: spec.Total, disabled: spec.Disabled, opts: map[string]string{}}
	if st.typ == "" {
		st.typ = "dir"
	}
	if st.total == 0 {
		st.total = 1 << 40
	}
	pl, modelled := storagePlugins[st.typ]
	content := spec.Content
	if modelled && content == nil {
		content = pl.defContent
	}
	for _, c := range content {
		st.content[c] = true
	}
	st.shared = st.shared || slices.Contains(sharedStorageTypes, st.typ)
	for k, v := range map[string]string{"path": spec.Path, "vgname": spec.VGName, "thinpool": spec.ThinPool,
		"server": spec.Server, "export": spec.Export} {
		if v == "" && modelled {
			v = pl.defaults[k]
		}
		if v != "" {
			st.opts[k] = v
		}
	}
	if st.fileBased() && st.opts["path"] == "" {
		st.opts["path"] = st.path()
	}
	s.stores[spec.ID] = st
	return nil
}

var contentTypes = []string{"backup", "images", "import", "iso", "rootdir", "snippets", "vztmpl"}

// UserSpec describes a user.
type UserSpec struct {
	Comment  string
	Disabled bool
	Expire   int64
	Groups   []string
}

// AddUser adds a user; the groups must exist.
func (srv *Server) AddUser(id string, spec UserSpec) error {
	return srv.withState(func(s *state) error {
		if _, _, err := pveacl.ParseUserID(id); err != nil {
			return fmt.Errorf("cannot add user: %w", err)
		}
		if _, ok := s.cfg.Users[id]; ok {
			return fmt.Errorf("cannot add user: user '%s' already exists", id)
		}
		for _, g := range spec.Groups {
			if _, ok := s.cfg.Groups[g]; !ok {
				return fmt.Errorf("cannot add user %s: no such group '%s'", id, g)
			}
		}
		s.cfg.Users[id] = pveacl.User{Enable: !spec.Disabled, Expire: spec.Expire, Comment: spec.Comment,
			Tokens: map[string]pveacl.Token{}}
		for _, g := range spec.Groups {
			addGroupMember(s, g, id)
		}
		s.touch()
		return nil
	})
}

func addGroupMember(s *state, group, uid string) {
	g := s.cfg.Groups[group]
	if i, ok := slices.BinarySearch(g.Members, uid); !ok {
		g.Members = slices.Insert(slices.Clone(g.Members), i, uid)
	}
	s.cfg.Groups[group] = g
}

// TokenSpec describes an API token. The zero value is a token without
// privilege separation (it holds every privilege of its user), as an empty
// privsep field in user.cfg means.
type TokenSpec struct {
	Privsep bool
	Comment string
	Expire  int64
	// Secret is the token's value; empty generates a UUID.
	Secret string
}

// AddToken adds a token to a user and returns its secret.
func (srv *Server) AddToken(userID, name string, spec TokenSpec) (string, error) {
	var secret string
	err := srv.withState(func(s *state) error {
		u, ok := s.cfg.Users[userID]
		if !ok {
			return fmt.Errorf("cannot add token: no such user ('%s')", userID)
		}
		if err := pveacl.ValidTokenName(name); err != nil {
			return fmt.Errorf("cannot add token: %w", err)
		}
		if _, ok := u.Tokens[name]; ok {
			return fmt.Errorf("cannot add token %s: Token already exists.", name)
		}
		if u.Tokens == nil {
			u.Tokens = map[string]pveacl.Token{}
		}
		u.Tokens[name] = pveacl.Token{Privsep: spec.Privsep, Comment: spec.Comment, Expire: spec.Expire}
		s.cfg.Users[userID] = u
		secret = spec.Secret
		if secret == "" {
			secret = s.newUUID()
		}
		s.secrets[pveacl.TokenID(userID, name)] = secret
		s.touch()
		return nil
	})
	return secret, err
}

// AddGroup adds a group with members (which need not exist, as in PVE).
func (srv *Server) AddGroup(id string, members ...string) error {
	return srv.withState(func(s *state) error {
		if err := pveacl.ValidGroupID(id); err != nil {
			return fmt.Errorf("cannot add group: %w", err)
		}
		if _, ok := s.cfg.Groups[id]; ok {
			return fmt.Errorf("cannot add group: group '%s' already exists", id)
		}
		s.cfg.Groups[id] = pveacl.Group{}
		for _, m := range members {
			addGroupMember(s, id, m)
		}
		s.touch()
		return nil
	})
}

// AddRole adds a custom role.
func (srv *Server) AddRole(id string, privs ...string) error {
	return srv.withState(func(s *state) error {
		if s.roleExists(id) {
			return fmt.Errorf("cannot add role: role '%s' already exists", id)
		}
		if err := pveacl.ValidRoleID(id); err != nil {
			return fmt.Errorf("cannot add role: %w", err)
		}
		list, err := pveacl.ParsePrivileges(s.cfg.Version, joinList(privs))
		if err != nil {
			return fmt.Errorf("cannot add role %s: %w", id, err)
		}
		s.cfg.Roles[id] = pveacl.Role{Privs: list}
		s.touch()
		return nil
	})
}

// SetACL grants roles to a subject on a path ("user", "group" or "token").
func (srv *Server) SetACL(path string, kind pveacl.SubjectKind, subject string, propagate bool, roles ...string) error {
	return srv.withState(func(s *state) error {
		n, err := pveacl.NormalizePath(path)
		if err != nil {
			return fmt.Errorf("cannot set ACL: %w", err)
		}
		for _, r := range roles {
			if !s.roleExists(r) {
				return fmt.Errorf("cannot set ACL: role '%s' does not exist", r)
			}
			s.cfg.ACL[pveacl.ACLKey{Path: n, Kind: kind, Subject: subject, Role: r}] = propagate
		}
		s.touch()
		return nil
	})
}

// AddPool adds a pool (its parent must exist) with members.
func (srv *Server) AddPool(id, comment string, vms []int, storages []string) error {
	return srv.withState(func(s *state) error {
		if err := pveacl.ValidNewPoolID(id); err != nil {
			return fmt.Errorf("cannot add pool: %w", err)
		}
		if _, ok := s.cfg.Pools[id]; ok {
			return fmt.Errorf("cannot add pool: pool '%s' already exists", id)
		}
		s.cfg.Pools[id] = pveacl.Pool{Comment: comment}
		for _, vm := range vms {
			if other := s.poolOf(vm); other != "" {
				return fmt.Errorf("cannot add pool %s: VM %d belongs already to pool '%s'", id, vm, other)
			}
			s.addToPool(id, vm)
		}
		p := s.cfg.Pools[id]
		for _, st := range storages {
			if i, ok := slices.BinarySearch(p.Storages, st); !ok {
				p.Storages = slices.Insert(p.Storages, i, st)
			}
		}
		s.cfg.Pools[id] = p
		s.touch()
		return nil
	})
}

// SetTokenSecret replaces a token's secret, as regenerating it does.
func (srv *Server) SetTokenSecret(tokenID, secret string) error {
	return srv.withState(func(s *state) error {
		if _, ok := s.cfg.Token(tokenID); !ok {
			return fmt.Errorf("cannot set the secret of %s: no such token", tokenID)
		}
		s.secrets[tokenID] = secret
		return nil
	})
}

// AccessConfig returns a copy of the access-control state. Its Resources
// list the guests and storages the server holds.
func (srv *Server) AccessConfig() *pveacl.Config {
	var out *pveacl.Config
	_ = srv.withState(func(s *state) error {
		out = s.cfg.Clone()
		out.Resources = pveacl.Resources{VMs: s.vmIDs(), Storages: sortedKeys(s.stores)}
		return nil
	})
	return out
}

// SetAccessConfig replaces the access-control state with a copy of cfg
// (its version must be the server's). Tokens keep their secrets; new ones
// get generated secrets (read them with TokenSecret). root@pam and the
// root token are kept.
func (srv *Server) SetAccessConfig(cfg *pveacl.Config) error {
	return srv.withState(func(s *state) error {
		if cfg.Version != s.cfg.Version {
			return fmt.Errorf("cannot load the access configuration: it is for PVE %d, the server runs PVE %d", cfg.Version, s.cfg.Version)
		}
		n := cfg.Clone()
		n.Resources = pveacl.Resources{}
		root := s.cfg.Users["root@pam"]
		n.Users["root@pam"] = mergeRoot(n.Users["root@pam"], root)
		secrets := map[string]string{}
		for uid, u := range n.Users {
			for name := range u.Tokens {
				id := pveacl.TokenID(uid, name)
				if sec, ok := s.secrets[id]; ok {
					secrets[id] = sec
				} else {
					secrets[id] = s.newUUID()
				}
			}
		}
		s.cfg, s.secrets = n, secrets
		s.touch()
		return nil
	})
}

func mergeRoot(loaded, current pveacl.User) pveacl.User {
	loaded.Enable = true
	if loaded.Tokens == nil {
		loaded.Tokens = map[string]pveacl.Token{}
	}
	if t, ok := current.Tokens[RootTokenName]; ok {
		loaded.Tokens[RootTokenName] = t
	}
	return loaded
}

// TokenSecret returns the secret of a token.
func (srv *Server) TokenSecret(tokenID string) (string, bool) {
	var sec string
	var ok bool
	_ = srv.withState(func(s *state) error { sec, ok = s.secrets[tokenID]; return nil })
	return sec, ok
}

func joinList(items []string) string {
	out := ""
	for i, s := range items {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}
