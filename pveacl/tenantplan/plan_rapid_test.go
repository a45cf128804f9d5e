package tenantplan_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/audit"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
)

// planMachine keeps a desired tenant set and an observed cluster that an
// operator keeps changing. Converging (plan, then apply in memory) must
// always succeed, leave nothing to plan, be idempotent, and leave a state
// whose audit has no error-level finding, in which the token that clones
// each tenant's VMs holds Mapping.Use on exactly the tenant's PCI
// mappings. A mapping granted out of band to a tenant that does not list
// it is found by the audit.
type planMachine struct {
	spec      tenantplan.Tenants
	obs       *pveacl.Config
	ownCapmox map[string]bool // tenant -> whether it has its own capmox token
}

var tenantNames = []string{"alpha", "beta", "gamma", "delta", "eps"}

// mappingNames are the PCI mappings the tenants draw from; neverMapped is
// one no tenant ever lists.
var mappingNames = []string{"gpu0", "gpu1", "gpu2", "nic0"}

const neverMapped = "gpu-never"

func newPlanMachine(t *rapid.T) *planMachine {
	m := &planMachine{obs: pveacl.NewConfig(pveacl.PVE9), ownCapmox: map[string]bool{}}
	m.spec.Platform.PVEVersion = pveacl.PVE9
	if rapid.Bool().Draw(t, "capmox") {
		m.spec.Platform.Capmox = &tenantplan.Credential{User: "capmox@pve", Token: "capi"}
	}
	m.spec.Platform.SharedStorages = []string{"iso"}
	return m
}

func (m *planMachine) addTenant(t *rapid.T) {
	var free []string
	for _, name := range tenantNames {
		if !slices.ContainsFunc(m.spec.Tenants, func(tn tenantplan.Tenant) bool { return tn.Name == name }) {
			free = append(free, name)
		}
	}
	if len(free) == 0 {
		return // every tenant exists
	}
	name := rapid.SampledFrom(free).Draw(t, "tenant")
	idx := slices.Index(tenantNames, name)
	tn := tenantplan.Tenant{Name: name, Storage: name + "-disks"}
	if rapid.Bool().Draw(t, "extraStorage") {
		tn.Storages = []string{name + "-backup"}
	}
	for i := rapid.IntRange(0, 2).Draw(t, "vms"); i > 0; i-- {
		tn.VMs = append(tn.VMs, 1000+idx*10+i)
	}
	if m.spec.Platform.Capmox != nil && rapid.Bool().Draw(t, "network") {
		tn.Networks = []tenantplan.Network{{Bridge: "vmbr1", VLANs: []int{100 + idx}}}
	}
	// A tenant keeps its choice of an own capmox token when it comes back:
	// Plan neither manages nor removes a token the specification stops
	// naming (a prune does).
	own, drawn := m.ownCapmox[name]
	if !drawn {
		own = rapid.Bool().Draw(t, "ownCapmox")
		m.ownCapmox[name] = own
	}
	if own {
		tn.Tokens.Capmox, tn.Templates = "capmox", []int{9000}
	}
	m.spec.Tenants = append(m.spec.Tenants, tn)
	for n := rapid.IntRange(0, 2).Draw(t, "mappings"); n > 0; n-- {
		m.mapOne(t, len(m.spec.Tenants)-1)
	}
}

// freeMappings are the mapping names no tenant lists.
func (m *planMachine) freeMappings() []string {
	var free []string
	for _, name := range mappingNames {
		if !slices.ContainsFunc(m.spec.Tenants, func(tn tenantplan.Tenant) bool { return slices.Contains(tn.PCIMappings, name) }) {
			free = append(free, name)
		}
	}
	return free
}

// mapOne gives tenant i a mapping no tenant lists, when a capmox token
// can take the grant.
func (m *planMachine) mapOne(t *rapid.T, i int) {
	free := m.freeMappings()
	if len(free) == 0 || (m.spec.Platform.Capmox == nil && m.spec.Tenants[i].Tokens.Capmox == "") {
		return
	}
	tn := &m.spec.Tenants[i]
	tn.PCIMappings = append(slices.Clone(tn.PCIMappings), rapid.SampledFrom(free).Draw(t, "mapping"))
}

func (m *planMachine) mapTenant(t *rapid.T) {
	if len(m.spec.Tenants) == 0 {
		return // no tenant yet
	}
	m.mapOne(t, rapid.IntRange(0, len(m.spec.Tenants)-1).Draw(t, "index"))
}

func (m *planMachine) unmapTenant(t *rapid.T) {
	if len(m.spec.Tenants) == 0 {
		return // no tenant yet
	}
	tn := &m.spec.Tenants[rapid.IntRange(0, len(m.spec.Tenants)-1).Draw(t, "index")]
	if len(tn.PCIMappings) == 0 {
		return // nothing to take away
	}
	j := rapid.IntRange(0, len(tn.PCIMappings)-1).Draw(t, "mapping")
	tn.PCIMappings = slices.Delete(slices.Clone(tn.PCIMappings), j, j+1)
}

// grantMapping gives a tenant's user Mapping.Use on a mapping the tenant
// does not list (another tenant's, one nobody lists, or every mapping
// through a propagating entry), as an operator might by hand; the audit
// must name it at once.
func (m *planMachine) grantMapping(t *rapid.T) {
	var present []tenantplan.Tenant
	for _, tn := range m.spec.Defaulted().Tenants {
		if _, ok := m.obs.Users[tn.User]; ok {
			present = append(present, tn)
		}
	}
	if len(present) == 0 {
		return // no tenant user on the cluster yet
	}
	tn := rapid.SampledFrom(present).Draw(t, "grantee")
	paths := []string{"/mapping", "/mapping/pci", tenantplan.PCIMappingPath(neverMapped)}
	for _, name := range mappingNames {
		if !slices.Contains(tn.PCIMappings, name) {
			paths = append(paths, tenantplan.PCIMappingPath(name))
		}
	}
	path := rapid.SampledFrom(paths).Draw(t, "path")
	m.obs.ACL[pveacl.ACLKey{Path: path, Kind: pveacl.KindUser, Subject: tn.User, Role: "PVEMappingUser"}] = path == "/mapping" || path == "/mapping/pci"
	rep, err := audit.Run(m.obs, &m.spec)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rep.Findings, func(f audit.Finding) bool {
		return f.Code == audit.CodeForeignMappingReach && f.Tenant == tn.Name && f.Subject == tn.User
	}) {
		t.Fatalf("Mapping.Use of %s on %s is not found: %s", tn.User, path, fmt.Sprint(rep.Findings))
	}
}

func (m *planMachine) removeTenant(t *rapid.T) {
	if len(m.spec.Tenants) == 0 {
		return // no tenant yet
	}
	i := rapid.IntRange(0, len(m.spec.Tenants)-1).Draw(t, "index")
	m.spec.Tenants = slices.Delete(m.spec.Tenants, i, i+1)
}

// drift makes one change an operator (or a broken script) might make.
func (m *planMachine) drift(t *rapid.T) {
	users := slices.Sorted(maps.Keys(m.obs.Users))
	switch rapid.IntRange(0, 6).Draw(t, "drift") {
	case 0: // flip a token's privilege separation
		uid := rapid.SampledFrom(users).Draw(t, "user")
		for name, tok := range m.obs.Users[uid].Tokens {
			tok.Privsep = !tok.Privsep
			m.obs.Users[uid].Tokens[name] = tok
		}
	case 1: // delete an entry
		if aces := m.obs.ACEs(); len(aces) > 0 {
			delete(m.obs.ACL, rapid.SampledFrom(aces).Draw(t, "entry").ACLKey)
		}
	case 2: // grant a stray role to a managed subject
		uid := rapid.SampledFrom(users).Draw(t, "user")
		path := rapid.SampledFrom([]string{"/", "/vms", "/pool/beta", "/storage/alpha-disks", "/storage/iso"}).Draw(t, "path")
		m.obs.ACL[pveacl.ACLKey{Path: path, Kind: pveacl.KindUser, Subject: uid, Role: "PVEVMAdmin"}] = rapid.Bool().Draw(t, "propagate")
	case 3: // widen a managed role
		if _, ok := m.obs.Roles[tenantplan.RoleCSI]; ok {
			m.obs.Roles[tenantplan.RoleCSI] = pveacl.Role{Privs: []string{"VM.Allocate", "VM.Audit"}}
		}
	case 4: // disable or delete a user (with its entries, as PVE does)
		uid := rapid.SampledFrom(users).Draw(t, "user")
		if uid == "root@pam" {
			return
		}
		if rapid.Bool().Draw(t, "delete") {
			m.deleteUser(uid)
		} else {
			u := m.obs.Users[uid]
			u.Enable = false
			m.obs.Users[uid] = u
		}
	case 5: // an unrelated pool takes a tenant VM
		vm := rapid.IntRange(1000, 1042).Draw(t, "vmid")
		for name, p := range m.obs.Pools {
			p.VMs = slices.DeleteFunc(p.VMs, func(id int) bool { return id == vm })
			m.obs.Pools[name] = p
		}
		legacy := m.obs.Pools["legacy"]
		legacy.AddVM(vm)
		m.obs.Pools["legacy"] = legacy
	default: // capmox creates a VM in a tenant pool
		if names := slices.Sorted(maps.Keys(m.obs.Pools)); len(names) > 0 {
			name := rapid.SampledFrom(names).Draw(t, "pool")
			vm := rapid.IntRange(5000, 5100).Draw(t, "newvm")
			if len(m.obs.PoolsOfVM(vm)) == 0 {
				p := m.obs.Pools[name]
				p.AddVM(vm)
				m.obs.Pools[name] = p
			}
		}
	}
}

func (m *planMachine) deleteUser(uid string) {
	delete(m.obs.Users, uid)
	for k := range m.obs.ACL {
		owner, _, err := pveacl.ParseTokenID(k.Subject)
		if k.Subject == uid || err == nil && owner == uid {
			delete(m.obs.ACL, k)
		}
	}
}

func (m *planMachine) converge(t *rapid.T) {
	changes, err := tenantplan.Plan(&m.spec, m.obs)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	again, _ := tenantplan.Plan(&m.spec, m.obs)
	if diff := cmp.Diff(changes, again); diff != "" {
		t.Fatalf("the plan is not deterministic: %s", diff)
	}
	after, err := tenantplan.Simulate(m.obs, changes)
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, usercfg.Marshal(m.obs))
	}
	twice, err := tenantplan.Simulate(after, changes)
	if err != nil || string(usercfg.Marshal(twice)) != string(usercfg.Marshal(after)) {
		t.Fatalf("applying the plan a second time changed the state (err %v)", err)
	}
	if next, _ := tenantplan.Plan(&m.spec, after); len(next) != 0 {
		t.Fatalf("the next plan is not empty: %+v", next)
	}
	rep, err := audit.Run(after, &m.spec)
	if err != nil {
		t.Fatal(err)
	}
	if rep.HasErrors() {
		t.Fatalf("the converged state leaks: %s\n%s", fmt.Sprint(rep.Findings), usercfg.Marshal(after))
	}
	m.checkMappings(t, after)
	m.obs = after
}

// checkMappings: each tenant's own capmox token holds Mapping.Use on
// exactly the tenant's mappings, the platform's on exactly those some
// tenant lists, and no CSI or CCM token on any.
func (m *planMachine) checkMappings(t *rapid.T, c *pveacl.Config) {
	ev := pveacl.NewEvaluator(c)
	check := func(id string, want func(name string) bool) {
		for _, name := range append(slices.Clone(mappingNames), neverMapped) {
			if got := ev.Permissions(id, tenantplan.PCIMappingPath(name)).Has("Mapping.Use"); got != want(name) {
				t.Fatalf("%s: Mapping.Use on mapping %s is %v, want %v\n%s", id, name, got, want(name), usercfg.Marshal(c))
			}
		}
	}
	spec := m.spec.Defaulted()
	for _, tn := range spec.Tenants {
		if id := tn.CapmoxTokenID(); id != "" {
			check(id, func(name string) bool { return slices.Contains(tn.PCIMappings, name) })
		}
		csi, ccm := tn.TokenIDs()
		check(csi, func(string) bool { return false })
		check(ccm, func(string) bool { return false })
	}
	if p := spec.Platform.Capmox; p != nil {
		check(p.TokenID(), func(name string) bool {
			return slices.ContainsFunc(spec.Tenants, func(tn tenantplan.Tenant) bool { return slices.Contains(tn.PCIMappings, name) })
		})
	}
}

func TestPlanConverges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newPlanMachine(t)
		t.Repeat(map[string]func(*rapid.T){
			"addTenant":    m.addTenant,
			"removeTenant": m.removeTenant,
			"mapTenant":    m.mapTenant,
			"unmapTenant":  m.unmapTenant,
			"grantMapping": m.grantMapping,
			"drift":        m.drift,
			"converge":     m.converge,
		})
	})
}
