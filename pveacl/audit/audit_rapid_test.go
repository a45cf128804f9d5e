package audit

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
)

// drawTenants returns a valid random tenant set of 2-4 tenants.
func drawTenants(t *rapid.T) *tenantplan.Tenants {
	spec := &tenantplan.Tenants{Platform: tenantplan.Platform{PVEVersion: pveacl.PVE9, SharedStorages: []string{"iso"},
		Capmox: &tenantplan.Credential{User: "capmox@pve", Token: "capi"}}}
	names := rapid.SliceOfNDistinct(rapid.SampledFrom(tenantNames), 2, 4, rapid.ID[string]).Draw(t, "tenants")
	for i, name := range names {
		tn := tenantplan.Tenant{Name: name, Storage: name + "-disks", VMs: []int{1000 + 10*i, 1001 + 10*i}}
		if rapid.Bool().Draw(t, "extra") {
			tn.Storages = []string{name + "-backup"}
		}
		for k := rapid.IntRange(0, 2).Draw(t, "mappings"); k > 0; k-- {
			tn.PCIMappings = append(tn.PCIMappings, fmt.Sprintf("gpu-%s-%d", name, k))
		}
		spec.Tenants = append(spec.Tenants, tn)
	}
	spec = spec.Defaulted()
	return spec
}

func convergedFor(t *rapid.T, spec *tenantplan.Tenants) *pveacl.Config {
	cfg := converged(t, spec)
	cfg.Resources.VMs = []int{4000, 4001}
	cfg.Resources.Storages = []string{"iso", "local"}
	cfg.Pools["infra"] = pveacl.Pool{VMs: []int{4100}, Storages: []string{"infra-disks"}}
	return cfg
}

// scramble adds random entries, memberships and pools around the tenants.
func scramble(t *rapid.T, spec *tenantplan.Tenants, cfg *pveacl.Config) {
	var subjects []subjectRef
	for _, tn := range spec.Tenants {
		csi, ccm := tn.TokenIDs()
		subjects = append(subjects, subjectRef{pveacl.KindUser, tn.User}, subjectRef{pveacl.KindToken, csi}, subjectRef{pveacl.KindToken, ccm})
	}
	subjects = append(subjects, subjectRef{pveacl.KindGroup, "ops"}, subjectRef{pveacl.KindUser, "capmox@pve"})
	paths := []string{"/", "/vms", "/storage", "/pool", "/nodes", "/vms/4000", "/vms/4100", "/storage/iso", "/storage/infra-disks", "/pool/infra",
		"/mapping", "/mapping/pci", "/mapping/pci/nic"}
	for _, tn := range spec.Tenants {
		for _, m := range tn.PCIMappings {
			paths = append(paths, tenantplan.PCIMappingPath(m))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Pools)) {
		paths = append(paths, pveacl.PoolPath(name))
		for _, vm := range cfg.Pools[name].VMs {
			paths = append(paths, pveacl.VMPath(vm))
		}
		for _, s := range cfg.Pools[name].Storages {
			paths = append(paths, pveacl.StoragePath(s))
		}
	}
	roles := []string{pveacl.RoleNoAccess, pveacl.RoleAuditor, "PVEVMUser", "PVEDatastoreUser", tenantplan.RoleCSI, tenantplan.RoleCCM, "PVEPoolUser",
		"PVEMappingUser", "PVEMappingAdmin"}
	for n := rapid.IntRange(0, 12).Draw(t, "entries"); n > 0; n-- {
		s := rapid.SampledFrom(subjects).Draw(t, "subject")
		k := pveacl.ACLKey{Path: rapid.SampledFrom(paths).Draw(t, "path"), Kind: s.kind, Subject: s.id, Role: rapid.SampledFrom(roles).Draw(t, "role")}
		cfg.ACL[k] = rapid.Bool().Draw(t, "propagate")
	}
	users := []string{}
	for _, tn := range spec.Tenants {
		users = append(users, tn.User)
	}
	for n := rapid.IntRange(0, 2).Draw(t, "members"); n > 0; n-- {
		g := cfg.Groups["ops"]
		g.AddMember(rapid.SampledFrom(users).Draw(t, "member"))
		cfg.Groups["ops"] = g
	}
	if rapid.Bool().Draw(t, "nested") {
		tn := rapid.SampledFrom(spec.Tenants).Draw(t, "nestedIn")
		cfg.Pools[tn.Pool+"/sub"] = pveacl.Pool{VMs: []int{4200}}
	}
	if rapid.Bool().Draw(t, "sharedStore") {
		tn := rapid.SampledFrom(spec.Tenants).Draw(t, "storeIn")
		p := cfg.Pools[tn.Pool]
		p.AddStorage(rapid.SampledFrom([]string{"iso", "infra-disks", spec.Tenants[0].Storage}).Draw(t, "store"))
		cfg.Pools[tn.Pool] = p
	}
	for uid, u := range cfg.Users {
		for name, tok := range u.Tokens {
			if rapid.IntRange(0, 9).Draw(t, "flip") == 0 {
				tok.Privsep = false
				cfg.Users[uid].Tokens[name] = tok
			}
		}
	}
}

// bruteReach evaluates every known foreign object (and the never-used ids)
// and returns those the subject holds privileges on.
func bruteReach(a *auditor, i int, subject string) []string {
	var out []string
	for _, p := range foreignObjects(a, i) {
		if !a.ev.Permissions(subject, p).Empty() {
			out = append(out, p)
		}
	}
	return out
}

func foreignObjects(a *auditor, i int) []string {
	var out []string
	check := func(p string) { out = append(out, p) }
	for _, p := range append(slices.Clone(a.poolNames), a.poolProbe) {
		if !a.ownPool(i, p) {
			check(pveacl.PoolPath(p))
		}
	}
	for _, vm := range append(append(slices.Clone(a.pooledVMs), a.unpooledVMs...), a.vmProbe) {
		if !a.ownVM(i, vm) {
			check(pveacl.VMPath(vm))
		}
	}
	for _, s := range append(append(slices.Clone(a.pooledSt), a.unpooledSt...), a.stProbe) {
		if !a.ownStorage(i, s) {
			check(pveacl.StoragePath(s))
		}
	}
	return out
}

// classOf names the class of a foreign object for a subject: an object its
// entries single out is its own class; the others group by kind and by
// whether they sit in a pool.
func classOf(a *auditor, r relevance, path string) string {
	switch {
	case strings.HasPrefix(path, "/pool/"):
		if name := strings.TrimPrefix(path, "/pool/"); r.specificPool(name) {
			return path
		}
		return "pool:generic"
	case len(path) > 5 && path[:5] == "/vms/":
		var vm int
		if _, err := fmt.Sscan(path[5:], &vm); err != nil {
			return "vm:unparsable"
		}
		if a.specificVM(r, vm) {
			return path
		}
		return fmt.Sprintf("vm:pooled=%v", len(a.vmPools[vm]) > 0)
	default:
		s := path[len("/storage/"):]
		if a.specificStorage(r, s) {
			return path
		}
		return fmt.Sprintf("storage:pooled=%v", len(a.storagePools[s]) > 0)
	}
}

// drawScrambled draws tenants, converges a cluster for them, scrambles it
// and audits it.
func drawScrambled(t *rapid.T) (*tenantplan.Tenants, *pveacl.Config, Report) {
	spec := drawTenants(t)
	cfg := convergedFor(t, spec)
	scramble(t, spec, cfg)
	rep, err := Run(cfg, spec)
	if err != nil {
		t.Fatal(err)
	}
	return spec, cfg, rep
}

// The audit checks one object per class; checking every object must find
// a leak for exactly the same subjects.
func TestAuditReachMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec, cfg, rep := drawScrambled(t)
		a := newAuditor(cfg, spec)
		flagged := map[string]map[string]bool{} // subject -> classes reported
		for _, f := range rep.Findings {
			if f.Code == CodeCrossTenantReach {
				if flagged[f.Subject] == nil {
					flagged[f.Subject] = map[string]bool{}
				}
				flagged[f.Subject][classOf(a, a.relevance(f.Subject), f.Path)] = true
			}
		}
		for i, tn := range a.tenants {
			subjects := []string{tn.User}
			for _, name := range slices.Sorted(maps.Keys(cfg.Users[tn.User].Tokens)) {
				subjects = append(subjects, pveacl.TokenID(tn.User, name))
			}
			for _, s := range subjects {
				r := a.relevance(s)
				classes := map[string]pveacl.PrivSet{}
				for _, p := range foreignObjects(a, i) {
					c, got := classOf(a, r, p), a.ev.Permissions(s, p)
					if first, ok := classes[c]; ok && first != got {
						t.Fatalf("%s: class %s is not uniform: %s holds %v, another member %v\n%s", s, c, p, got.Map(), first.Map(), usercfg.Marshal(cfg))
					}
					classes[c] = got
				}
				for _, p := range bruteReach(a, i, s) {
					if c := classOf(a, r, p); !flagged[s][c] {
						t.Fatalf("%s reaches %s (class %s) but the audit reported only %v\n%s", s, p, c, flagged[s], usercfg.Marshal(cfg))
					}
				}
			}
		}
	})
}

// leak is one way to break isolation and the finding that must report it.
type leak struct {
	name   string
	code   Code
	inject func(cfg *pveacl.Config, victim, other tenantplan.Tenant) (subject string)
}

var leaks = []leak{
	{"foreign pool", CodeCrossTenantReach, func(c *pveacl.Config, v, o tenantplan.Tenant) string {
		c.ACL[pveacl.ACLKey{Path: pveacl.PoolPath(o.Pool), Kind: pveacl.KindUser, Subject: v.User, Role: "PVEPoolUser"}] = false
		return v.User
	}},
	{"foreign VM", CodeCrossTenantReach, func(c *pveacl.Config, v, o tenantplan.Tenant) string {
		c.ACL[pveacl.ACLKey{Path: pveacl.VMPath(o.VMs[0]), Kind: pveacl.KindUser, Subject: v.User, Role: "PVEVMUser"}] = false
		return v.User
	}},
	{"unpooled VM", CodeCrossTenantReach, func(c *pveacl.Config, v, _ tenantplan.Tenant) string {
		c.ACL[pveacl.ACLKey{Path: "/vms/4000", Kind: pveacl.KindUser, Subject: v.User, Role: tenantplan.RoleCCM}] = false
		return v.User
	}},
	{"shared storage", CodeCrossTenantReach, func(c *pveacl.Config, v, _ tenantplan.Tenant) string {
		csi, _ := v.TokenIDs()
		for _, s := range []subjectRef{{pveacl.KindUser, v.User}, {pveacl.KindToken, csi}} {
			c.ACL[pveacl.ACLKey{Path: "/storage/iso", Kind: s.kind, Subject: s.id, Role: tenantplan.RoleCSIStorage}] = false
		}
		return csi
	}},
	{"propagating /vms", CodePropagatingTopLevelACL, func(c *pveacl.Config, v, _ tenantplan.Tenant) string {
		c.ACL[pveacl.ACLKey{Path: "/vms", Kind: pveacl.KindUser, Subject: v.User, Role: pveacl.RoleNoAccess}] = true
		return v.User
	}},
	{"storage in two pools", CodeSharedTenantStorage, func(c *pveacl.Config, v, o tenantplan.Tenant) string {
		p := c.Pools[o.Pool]
		p.AddStorage(v.Storage)
		c.Pools[o.Pool] = p
		return ""
	}},
	{"privsep off", CodeTokenWithoutPrivsep, func(c *pveacl.Config, v, _ tenantplan.Tenant) string {
		_, ccm := v.TokenIDs()
		c.Users[v.User].Tokens[v.Tokens.CCM] = pveacl.Token{}
		return ccm
	}},
	{"group", CodeTenantUserInGroup, func(c *pveacl.Config, v, _ tenantplan.Tenant) string {
		g := c.Groups["staff"]
		g.AddMember(v.User)
		c.Groups["staff"] = g
		c.ACL[pveacl.ACLKey{Path: "/nodes", Kind: pveacl.KindGroup, Subject: "staff", Role: pveacl.RoleAuditor}] = false
		return v.User
	}},
	{"broader token", CodeTokenBroaderThanRole, func(c *pveacl.Config, v, _ tenantplan.Tenant) string {
		csi, _ := v.TokenIDs()
		c.ACL[pveacl.ACLKey{Path: pveacl.PoolPath(v.Pool), Kind: pveacl.KindUser, Subject: v.User, Role: "PVEVMUser"}] = false
		c.ACL[pveacl.ACLKey{Path: pveacl.PoolPath(v.Pool), Kind: pveacl.KindToken, Subject: csi, Role: "PVEVMUser"}] = false
		return csi
	}},
	{"nested pool", CodeNestedTenantPool, func(c *pveacl.Config, v, _ tenantplan.Tenant) string {
		c.Pools[v.Pool+"/x"] = pveacl.Pool{}
		return ""
	}},
	{"foreign mapping", CodeForeignMappingReach, func(c *pveacl.Config, v, o tenantplan.Tenant) string {
		path := "/mapping/pci/nic"
		if len(o.PCIMappings) > 0 {
			path = tenantplan.PCIMappingPath(o.PCIMappings[0])
		}
		c.ACL[pveacl.ACLKey{Path: path, Kind: pveacl.KindUser, Subject: v.User, Role: "PVEMappingUser"}] = false
		return v.User
	}},
	{"propagating mapping", CodeForeignMappingReach, func(c *pveacl.Config, v, _ tenantplan.Tenant) string {
		c.ACL[pveacl.ACLKey{Path: "/mapping", Kind: pveacl.KindUser, Subject: v.User, Role: "PVEMappingUser"}] = true
		return v.User
	}},
	{"mapping modify", CodeForeignMappingReach, func(c *pveacl.Config, v, _ tenantplan.Tenant) string {
		c.ACL[pveacl.ACLKey{Path: "/mapping/pci", Kind: pveacl.KindUser, Subject: v.User, Role: "PVEMappingAdmin"}] = false
		return v.User
	}},
	{"missing mapping use", CodeMissingMappingUse, func(c *pveacl.Config, v, _ tenantplan.Tenant) string {
		if len(v.PCIMappings) == 0 {
			return skipLeak
		}
		c.ACL[pveacl.ACLKey{Path: tenantplan.PCIMappingPath(v.PCIMappings[0]), Kind: pveacl.KindUser, Subject: "capmox@pve", Role: pveacl.RoleNoAccess}] = false
		return "capmox@pve!capi"
	}},
}

// skipLeak is what inject returns when the leak cannot be made with the
// tenants drawn.
const skipLeak = "-"

// Every leak injected into a clean state is reported with its code, for
// the tenant it concerns.
func TestAuditFlagsInjectedLeaks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := drawTenants(t)
		cfg := convergedFor(t, spec)
		if rep, _ := Run(cfg, spec); rep.HasErrors() || len(rep.Findings) != 1 {
			t.Fatalf("clean state has findings: %+v", rep.Findings)
		}
		type injected struct {
			leak
			tenant, subject string
		}
		var done []injected
		for n := rapid.IntRange(1, 4).Draw(t, "leaks"); n > 0; n-- {
			l := rapid.SampledFrom(leaks).Draw(t, "leak")
			pair := rapid.SliceOfNDistinct(rapid.IntRange(0, len(spec.Tenants)-1), 2, 2, rapid.ID[int]).Draw(t, "pair")
			v, o := spec.Tenants[pair[0]], spec.Tenants[pair[1]]
			if subject := l.inject(cfg, v, o); subject != skipLeak {
				done = append(done, injected{leak: l, tenant: v.Name, subject: subject})
			}
		}
		rep, err := Run(cfg, spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range done {
			found := slices.ContainsFunc(rep.Findings, func(f Finding) bool {
				return f.Code == d.code && (d.subject == "" || f.Subject == d.subject) && (f.Tenant == d.tenant || f.Tenant == "")
			})
			if !found {
				t.Fatalf("leak %q in tenant %s (%s) not reported with %s; findings:\n%s", d.name, d.tenant, d.subject, d.code, fmt.Sprint(rep.Findings))
			}
		}
	})
}

// The audit's PCI mapping findings are exactly what asking about every
// mapping finds: a tenant subject with Mapping.Use or Mapping.Modify on a
// mapping its tenant does not list (a mapping no entry names stands for
// the audit's never-named id), Mapping.Modify on its own or on
// /mapping/pci, and a cloning token without Mapping.Use on a mapping of
// its tenant.
func TestAuditMappingsMatchBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec, cfg, rep := drawScrambled(t)
		got := map[string]bool{}
		for _, f := range rep.Findings {
			if f.Code == CodeForeignMappingReach || f.Code == CodeMissingMappingUse {
				got[fmt.Sprintf("%s %s %s", f.Code, f.Subject, f.Path)] = true
			}
		}
		a := newAuditor(cfg, spec)
		a.mappingCandidates()
		ev := pveacl.NewEvaluator(cfg)
		ids := map[string]bool{"unnamed-by-any": true}
		for k := range cfg.ACL {
			if id, ok := strings.CutPrefix(k.Path, "/mapping/pci/"); ok {
				ids[id] = true
			}
		}
		for _, tn := range spec.Tenants {
			for _, m := range tn.PCIMappings {
				ids[m] = true
			}
		}
		want := map[string]bool{}
		for _, tn := range spec.Tenants {
			subjects := []string{tn.User}
			for _, name := range slices.Sorted(maps.Keys(cfg.Users[tn.User].Tokens)) {
				subjects = append(subjects, pveacl.TokenID(tn.User, name))
			}
			for _, s := range subjects {
				for id := range ids {
					p := ev.Permissions(s, tenantplan.PCIMappingPath(id))
					own := slices.Contains(tn.PCIMappings, id)
					if p.Has("Mapping.Modify") || (p.Has("Mapping.Use") && !own) {
						path := tenantplan.PCIMappingPath(id)
						if id == "unnamed-by-any" {
							path = tenantplan.PCIMappingPath(a.mappingProbe)
						}
						want[fmt.Sprintf("%s %s %s", CodeForeignMappingReach, s, path)] = true
					}
				}
				if ev.Permissions(s, "/mapping/pci").Has("Mapping.Modify") {
					want[fmt.Sprintf("%s %s /mapping/pci", CodeForeignMappingReach, s)] = true
				}
			}
			cloner := spec.Platform.Capmox.TokenID()
			for _, m := range tn.PCIMappings {
				if !ev.Permissions(cloner, tenantplan.PCIMappingPath(m)).Has("Mapping.Use") {
					want[fmt.Sprintf("%s %s %s", CodeMissingMappingUse, cloner, tenantplan.PCIMappingPath(m))] = true
				}
			}
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("mapping findings differ from asking about every mapping (-want +got):\n%s\n%s", diff, usercfg.Marshal(cfg))
		}
	})
}
