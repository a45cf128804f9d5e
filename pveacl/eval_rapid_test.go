package pveacl_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
)

// permMachine grows a random configuration step by step; after every step
// the indexed Evaluator must agree with the naive reference on every auth
// id and path, and a privilege-separated token must never exceed its user.
type permMachine struct {
	cfg *pveacl.Config
}

var (
	rUsers    = []string{"ann@pve", "bob@pve", "cid@pam", "root@pam"}
	rTokens   = []string{"t1", "t2", "t3"}
	rGroups   = []string{"g1", "g2", "g3"}
	rRoles    = []string{"R1", "R2", "R3", pveacl.RoleNoAccess, "PVEAuditor", "PVEVMUser", "Ghost"}
	rPools    = []string{"p1", "p2", "p1/c", "p1/c/d"}
	rStorages = []string{"s1", "s2", "s3"}
	rVMs      = []int{100, 101, 102, 200}
	rPaths    = []string{"/", "/vms", "/vms/100", "/vms/101", "/vms/102", "/vms/200", "/storage", "/storage/s1",
		"/storage/s2", "/storage/s3", "/pool", "/pool/p1", "/pool/p2", "/pool/p1/c", "/pool/p1/c/d", "/nodes", "/nodes/n1",
		"/vms/100/x"}
	rQueryPaths = append(append([]string{}, rPaths...), "", "vms/100", "/vms//100", "/vms/100/", "/pool/p1/c/d/e")
	rPrivs      = []string{"VM.Audit", "VM.PowerMgmt", "VM.Console", "Datastore.Audit", "Sys.Audit", "Permissions.Modify"}
)

func (m *permMachine) addUser(t *rapid.T) {
	id := rapid.SampledFrom(rUsers).Draw(t, "user")
	m.cfg.Users[id] = pveacl.User{Enable: true, Tokens: map[string]pveacl.Token{}}
}

func (m *permMachine) addToken(t *rapid.T) {
	users := slices.Sorted(maps.Keys(m.cfg.Users))
	if len(users) == 0 {
		return // no user yet
	}
	id := rapid.SampledFrom(users).Draw(t, "user")
	u := m.cfg.Users[id]
	if u.Tokens == nil {
		u.Tokens = map[string]pveacl.Token{}
	}
	u.Tokens[rapid.SampledFrom(rTokens).Draw(t, "token")] = pveacl.Token{Privsep: rapid.Bool().Draw(t, "privsep")}
	m.cfg.Users[id] = u
}

func (m *permMachine) joinGroup(t *rapid.T) {
	g := rapid.SampledFrom(rGroups).Draw(t, "group")
	grp := m.cfg.Groups[g]
	grp.AddMember(rapid.SampledFrom(rUsers).Draw(t, "member"))
	m.cfg.Groups[g] = grp
}

func (m *permMachine) addRole(t *rapid.T) {
	privs := rapid.SliceOfNDistinct(rapid.SampledFrom(rPrivs), 0, 3, rapid.ID[string]).Draw(t, "privs")
	r := pveacl.Role{}
	r.Privs = slices.Sorted(slices.Values(privs))
	m.cfg.Roles[rapid.SampledFrom([]string{"R1", "R2", "R3"}).Draw(t, "role")] = r
}

func (m *permMachine) addMember(t *rapid.T) {
	pool := rapid.SampledFrom(rPools).Draw(t, "pool")
	for p := pool; p != ""; p = pveacl.PoolParent(p) {
		if _, ok := m.cfg.Pools[p]; !ok {
			m.cfg.Pools[p] = pveacl.Pool{}
		}
	}
	p := m.cfg.Pools[pool]
	if rapid.Bool().Draw(t, "vm") {
		vm := rapid.SampledFrom(rVMs).Draw(t, "vmid")
		if len(m.cfg.PoolsOfVM(vm)) == 0 {
			p.AddVM(vm)
		}
	} else {
		p.AddStorage(rapid.SampledFrom(rStorages).Draw(t, "storage"))
	}
	m.cfg.Pools[pool] = p
}

func (m *permMachine) subject(t *rapid.T) (pveacl.SubjectKind, string) {
	switch rapid.IntRange(0, 2).Draw(t, "kind") {
	case 0:
		return pveacl.KindUser, rapid.SampledFrom(rUsers).Draw(t, "subject")
	case 1:
		return pveacl.KindGroup, rapid.SampledFrom(rGroups).Draw(t, "subject")
	}
	return pveacl.KindToken, pveacl.TokenID(rapid.SampledFrom(rUsers).Draw(t, "owner"), rapid.SampledFrom(rTokens).Draw(t, "token"))
}

func (m *permMachine) setACL(t *rapid.T) {
	kind, subject := m.subject(t)
	k := pveacl.ACLKey{Path: rapid.SampledFrom(rPaths).Draw(t, "path"), Kind: kind, Subject: subject,
		Role: rapid.SampledFrom(rRoles).Draw(t, "role")}
	m.cfg.ACL[k] = rapid.Bool().Draw(t, "propagate")
}

// denyPool and grantBroad make the subtle cases common: a pool NoAccess
// meeting a regular grant on the pool's members.
func (m *permMachine) denyPool(t *rapid.T) {
	kind, subject := m.subject(t)
	path := pveacl.PoolPath(rapid.SampledFrom(rPools).Draw(t, "pool"))
	m.cfg.ACL[pveacl.ACLKey{Path: path, Kind: kind, Subject: subject, Role: pveacl.RoleNoAccess}] = rapid.Bool().Draw(t, "propagate")
}

func (m *permMachine) grantBroad(t *rapid.T) {
	kind, subject := m.subject(t)
	path := rapid.SampledFrom([]string{"/", "/vms", "/storage", "/pool"}).Draw(t, "path")
	m.cfg.ACL[pveacl.ACLKey{Path: path, Kind: kind, Subject: subject, Role: rapid.SampledFrom([]string{"PVEVMUser", "PVEAuditor", "R1"}).Draw(t, "role")}] = true
}

func (m *permMachine) deleteACL(t *rapid.T) {
	aces := m.cfg.ACEs()
	if len(aces) == 0 {
		return // no entry yet
	}
	delete(m.cfg.ACL, rapid.SampledFrom(aces).Draw(t, "entry").ACLKey)
}

func (m *permMachine) authIDs() []string {
	ids := []string{"nobody@pve", "x", "nobody@pve!t1"}
	for _, uid := range slices.Sorted(maps.Keys(m.cfg.Users)) {
		ids = append(ids, uid)
		for _, name := range slices.Sorted(maps.Keys(m.cfg.Users[uid].Tokens)) {
			ids = append(ids, pveacl.TokenID(uid, name))
		}
	}
	return ids
}

func (m *permMachine) check(t *rapid.T) {
	ev, naive := pveacl.NewEvaluator(m.cfg), naiveEvaluator{m.cfg}
	ids := m.authIDs()
	paths := append([]string{}, rQueryPaths...)
	for _, p := range m.cfg.Pools { // pool members twice as likely: pool roles are the subtle part
		for _, vm := range p.VMs {
			paths = append(paths, pveacl.VMPath(vm), pveacl.VMPath(vm))
		}
		for _, s := range p.Storages {
			paths = append(paths, pveacl.StoragePath(s), pveacl.StoragePath(s))
		}
	}
	for i := 0; i < 12; i++ {
		id := rapid.SampledFrom(ids).Draw(t, "authid")
		path := rapid.SampledFrom(paths).Draw(t, "query")
		got, want := ev.Permissions(id, path), naive.permissions(id, path)
		if got != want {
			t.Fatalf("Permissions(%s, %q) differs from the reference: -want +got:\n%s\nconfig:\n%s", id, path,
				cmp.Diff(want.Map(), got.Map()), usercfg.Marshal(m.cfg))
		}
		if gr, wr := ev.Roles(id, path), naive.roles(id, path); !maps.Equal(gr, wr) {
			t.Fatalf("Roles(%s, %q): -want +got:\n%s", id, path, cmp.Diff(wr, gr))
		}
	}
	for _, id := range ids { // every token on every path, against its user
		for _, path := range paths {
			m.checkTokenWithinUser(t, ev, id, path, ev.Permissions(id, path))
		}
	}
}

// checkTokenWithinUser: a privilege-separated token never holds a privilege
// (or a propagate flag) its user lacks.
func (m *permMachine) checkTokenWithinUser(t *rapid.T, ev *pveacl.Evaluator, id, path string, got pveacl.PrivSet) {
	if !pveacl.IsTokenID(id) {
		return
	}
	tok, ok := m.cfg.Token(id)
	uid, _, _ := pveacl.ParseTokenID(id)
	if !ok || !tok.Privsep || uid == "root@pam" {
		return
	}
	user := ev.Permissions(uid, path)
	flagBeyond := slices.ContainsFunc(got.Names(), func(p string) bool { return got.Propagates(p) && !user.Propagates(p) })
	if !got.Minus(user).Empty() || flagBeyond {
		t.Fatalf("token %s on %q holds %v, beyond its user's %v", id, path, got.Map(), user.Map())
	}
}

func TestPermissionsAgreeWithReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &permMachine{cfg: pveacl.NewConfig(pveacl.PVE9)}
		t.Repeat(map[string]func(*rapid.T){
			"addUser":    m.addUser,
			"addToken":   m.addToken,
			"joinGroup":  m.joinGroup,
			"addRole":    m.addRole,
			"addMember":  m.addMember,
			"setACL":     m.setACL,
			"denyPool":   m.denyPool,
			"grantBroad": m.grantBroad,
			"deleteACL":  m.deleteACL,
			"":           m.check,
		})
	})
}

// The parsed form of a random configuration evaluates like the original.
func TestWrittenConfigEvaluatesAlike(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &permMachine{cfg: pveacl.NewConfig(pveacl.PVE9)}
		for i := rapid.IntRange(0, 30).Draw(t, "steps"); i > 0; i-- {
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0:
				m.addUser(t)
			case 1:
				if len(m.cfg.Users) > 1 {
					m.addToken(t)
				}
			case 2:
				m.joinGroup(t)
			case 3:
				m.addRole(t)
			case 4:
				m.addMember(t)
			default:
				m.setACL(t)
			}
		}
		dropUncarried(m.cfg)
		text := usercfg.Marshal(m.cfg)
		back, warnings := usercfg.Parse(text, pveacl.PVE9)
		ev1, ev2 := pveacl.NewEvaluator(m.cfg), pveacl.NewEvaluator(back)
		for _, id := range m.authIDs() {
			for _, path := range rQueryPaths {
				if a, b := ev1.Permissions(id, path), ev2.Permissions(id, path); a != b {
					t.Fatalf("%s on %q: %v before writing, %v after\n%s\n%v", id, path, a.Map(), b.Map(), text, warnings.Warnings)
				}
			}
		}
	})
}

// dropUncarried removes the entries user.cfg cannot carry: entries of
// tokens or roles that do not exist (PVE's parser drops them) and root@pam's
// own entries (PVE's writer drops them).
func dropUncarried(c *pveacl.Config) {
	for k := range c.ACL {
		_, tokenOK := c.Token(k.Subject)
		_, roleOK := c.Roles[k.Role]
		if k.Kind == pveacl.KindUser && k.Subject == "root@pam" || k.Kind == pveacl.KindToken && !tokenOK || !roleOK && !pveacl.IsBuiltinRole(k.Role) {
			delete(c.ACL, k)
		}
	}
}
