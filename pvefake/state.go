package pvefake

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// state is everything the server knows. One mutex in Server guards it.
type state struct {
	cfg     *pveacl.Config
	ev      *pveacl.Evaluator // nil after an access-control change
	secrets map[string]string // full token id -> secret
	cluster string            // cluster name; "" for a standalone node
	nodes   map[string]*node
	stores  map[string]*storage
	volumes map[volKey]*volume
	vms     map[int]*guest
	tasks   map[string]*task
	pid     int
	now     func() time.Time
	newUUID func() string
	macSeq  int
	uploads int       // uploads received, for their temporary file names
	sdnSt   *sdnState // SDN and node networks; see sdn()
	haSt    *haState  // HA configuration and node loss; see ha()
	// pciMaps are the sections of mapping/pci.cfg by ID, pciOrder their
	// order in the file.
	pciMaps  map[string]*pciMapping
	pciOrder []string
	// fenceDelay is the time from a node going offline to the recovery
	// of its HA services.
	fenceDelay time.Duration
}

type node struct {
	name   string
	id     int
	ip     string
	maxCPU int
	maxMem uint64
}

type storage struct {
	id       string
	typ      string // dir, nfs, lvmthin, rbd, zfspool, ...
	content  map[string]bool
	shared   bool
	nodes    []string // nil: every node
	total    uint64
	disabled bool
	// opts are the type's own options of storage.cfg (path, vgname,
	// thinpool, server, export), as GET /storage/{storage} shows them.
	opts map[string]string
}

// path is where a file storage keeps its files: its path option, else
// /var/lib/vz for local and /mnt/pve/<id> (where PVE mounts network
// storages) for the others.
func (s *storage) path() string {
	if p := s.opts["path"]; p != "" {
		return p
	}
	if s.id == "local" {
		return "/var/lib/vz"
	}
	return "/mnt/pve/" + s.id
}

// fileBased reports whether the storage has a path (dir-like plugins).
func (s *storage) fileBased() bool {
	switch s.typ {
	case "dir", "nfs", "cifs", "cephfs", "glusterfs", "btrfs":
		return true
	}
	return false
}

// onNode reports whether the storage is enabled on a node.
func (s *storage) onNode(n string) bool {
	return !s.disabled && (s.nodes == nil || slices.Contains(s.nodes, n))
}

func (s *storage) contentList() string {
	return strings.Join(sortedKeys(s.content), ",")
}

// volKey locates a volume: shared storages hold one copy (node ""), local
// ones one per node.
type volKey struct {
	node  string
	volid string
}

type volume struct {
	volid   string
	storage string
	vtype   string // images, iso, vztmpl, import, backup
	format  string
	owner   int // VMID owning an image, 0 otherwise
	size    uint64
	ctime   int64
	base    bool   // a template's base volume
	data    []byte // the file's bytes, kept for uploads only
}

type guest struct {
	vmid    int
	node    string
	conf    map[string]string
	running bool
	// pci are the host PCI devices the running guest took at its start.
	pci []pciHold
}

func newState(v pveacl.Version, now func() time.Time, uuid func() string) *state {
	return &state{cfg: pveacl.NewConfig(v), secrets: map[string]string{}, nodes: map[string]*node{},
		stores: map[string]*storage{}, volumes: map[volKey]*volume{}, vms: map[int]*guest{},
		tasks: map[string]*task{}, pid: 4000, now: now, newUUID: uuid, pciMaps: map[string]*pciMapping{}}
}

// eval returns an evaluator of the current access-control state.
func (s *state) eval() *pveacl.Evaluator {
	if s.ev == nil {
		s.ev = pveacl.NewEvaluator(s.cfg)
	}
	return s.ev
}

// touch records an access-control change.
func (s *state) touch() { s.ev = nil }

func (s *state) perms(authID, path string) pveacl.PrivSet { return s.eval().Permissions(authID, path) }

// volKeyFor returns where a volume of a storage lives on a node.
func (s *state) volKeyFor(node, volid string) volKey {
	sid, _, _ := strings.Cut(volid, ":")
	if st, ok := s.stores[sid]; ok && st.shared {
		return volKey{volid: volid}
	}
	return volKey{node: node, volid: volid}
}

func (s *state) volume(node, volid string) (*volume, bool) {
	v, ok := s.volumes[s.volKeyFor(node, volid)]
	return v, ok
}

func (s *state) putVolume(node string, v *volume) { s.volumes[s.volKeyFor(node, v.volid)] = v }

func (s *state) dropVolume(node, volid string) { delete(s.volumes, s.volKeyFor(node, volid)) }

// vmIDs returns the guests' VMIDs in order.
func (s *state) vmIDs() []int {
	out := make([]int, 0, len(s.vms))
	for id := range s.vms {
		out = append(out, id)
	}
	sort.Ints(out)
	return out
}

// poolOf returns the pool that lists a guest, or "".
func (s *state) poolOf(vmid int) string {
	if p := s.cfg.PoolsOfVM(vmid); len(p) > 0 {
		return p[0]
	}
	return ""
}

func (s *state) addToPool(pool string, vmid int) {
	p := s.cfg.Pools[pool]
	if i, ok := slices.BinarySearch(p.VMs, vmid); !ok {
		p.VMs = slices.Insert(p.VMs, i, vmid)
	}
	s.cfg.Pools[pool] = p
	s.touch()
}

func (s *state) removeFromPools(vmid int) {
	for name, p := range s.cfg.Pools {
		if i, ok := slices.BinarySearch(p.VMs, vmid); ok {
			p.VMs = nilIfEmpty(slices.Delete(slices.Clone(p.VMs), i, i+1))
			s.cfg.Pools[name] = p
		}
	}
	s.touch()
}

// dropACLUnder removes every ACL entry on path and below, as deleting a
// node of PVE's ACL tree does.
func (s *state) dropACLUnder(path string) {
	for k := range s.cfg.ACL {
		if k.Path == path || strings.HasPrefix(k.Path, path+"/") {
			delete(s.cfg.ACL, k)
		}
	}
	s.touch()
}

// dropSubjectACL removes the entries of one subject everywhere.
func (s *state) dropSubjectACL(kind pveacl.SubjectKind, subject string) {
	for k := range s.cfg.ACL {
		if k.Kind == kind && k.Subject == subject {
			delete(s.cfg.ACL, k)
		}
	}
	s.touch()
}

// deleteToken removes a token, its secret and its ACL entries (PVE's parser
// drops entries of tokens that no longer exist).
func (s *state) deleteToken(uid, name string) {
	u := s.cfg.Users[uid]
	delete(u.Tokens, name)
	s.cfg.Users[uid] = u
	id := pveacl.TokenID(uid, name)
	delete(s.secrets, id)
	s.dropSubjectACL(pveacl.KindToken, id)
}

// roleExists reports whether a built-in or custom role exists.
func (s *state) roleExists(id string) bool {
	if _, ok := s.cfg.Roles[id]; ok {
		return true
	}
	_, ok := pveacl.BuiltinRoles(s.cfg.Version)[id]
	return ok
}

// rolePrivs returns a role's privileges.
func (s *state) rolePrivs(id string) []string {
	if r, ok := s.cfg.Roles[id]; ok {
		return r.Privs
	}
	return pveacl.BuiltinRoles(s.cfg.Version)[id]
}

// defaultNode is the first node by name.
func (s *state) defaultNode() string {
	names := sortedKeys(s.nodes)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}
