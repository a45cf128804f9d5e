package audit

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// subjectRef names an ACL subject.
type subjectRef struct {
	kind pveacl.SubjectKind
	id   string
}

// auditor holds the indexes one audit needs.
type auditor struct {
	clusters     []Cluster // the existing clusters; nil skips leftoverVolumes
	cfg          *pveacl.Config
	spec         *tenantplan.Tenants
	tenants      []tenantplan.Tenant
	ev           *pveacl.Evaluator
	perm         permissioner // answers the permission questions (the Evaluator)
	entries      map[subjectRef][]pveacl.ACE
	groupsOf     map[string][]string // user -> groups listing it, sorted
	poolNames    []string            // sorted
	poolTenant   map[string]int      // tenant pool -> tenant index
	declaredVM   map[int]int         // VM -> tenant listing it
	declaredSt   map[string]int      // storage -> tenant listing it, -1 for shared ones
	vmPools      map[int][]string    // VM -> pools
	storagePools map[string][]string // storage -> pools
	unpooledVMs  []int               // sorted known VMs in no pool
	pooledVMs    []int               // sorted
	unpooledSt   []string            // sorted known storages in no pool
	pooledSt     []string            // sorted
	vmProbe      int
	stProbe      string
	poolProbe    string
	sdnPaths     []string // SDN paths to ask about, sorted; see sdnCandidates
	mappingPaths []string // PCI mapping paths to ask about, sorted; see mappingCandidates
	mappingProbe string   // a PCI mapping id no entry and no tenant names
	findings     []Finding
	subjects     int
	objects      int
}

func newAuditor(cfg *pveacl.Config, t *tenantplan.Tenants) *auditor {
	ev := pveacl.NewEvaluator(cfg)
	tenants := slices.Clone(t.Tenants)
	slices.SortFunc(tenants, func(x, y tenantplan.Tenant) int { return strings.Compare(x.Name, y.Name) })
	a := &auditor{cfg: cfg, spec: t, tenants: tenants, ev: ev, perm: ev, groupsOf: map[string][]string{},
		entries: map[subjectRef][]pveacl.ACE{}, poolTenant: map[string]int{}, vmPools: map[int][]string{},
		storagePools: map[string][]string{}, declaredVM: map[int]int{}, declaredSt: map[string]int{}}
	for _, s := range t.Platform.SharedStorages {
		a.declaredSt[s] = -1
	}
	for i, tn := range a.tenants {
		a.poolTenant[tn.Pool] = i
		for _, vm := range tn.VMs {
			a.declaredVM[vm] = i
		}
		for _, s := range tn.AllStorages() {
			a.declaredSt[s] = i
		}
	}
	for _, g := range slices.Sorted(maps.Keys(cfg.Groups)) {
		for _, m := range cfg.Groups[g].Members {
			a.groupsOf[m] = append(a.groupsOf[m], g)
		}
	}
	vms, storages, pools := a.indexEntries()
	a.poolNames = slices.Sorted(maps.Keys(cfg.Pools))
	for _, name := range a.poolNames {
		pools[name] = true
		for _, vm := range cfg.Pools[name].VMs {
			a.vmPools[vm] = append(a.vmPools[vm], name)
			vms[vm] = true
		}
		for _, s := range cfg.Pools[name].Storages {
			a.storagePools[s] = append(a.storagePools[s], name)
			storages[s] = true
		}
	}
	for _, vm := range cfg.Resources.VMs {
		vms[vm] = true
	}
	storages = addAll(storages, cfg.Resources.Storages, t.Platform.SharedStorages)
	for _, tn := range a.tenants {
		storages = addAll(storages, tn.AllStorages())
		pools[tn.Pool] = true
		for _, vm := range tn.VMs {
			vms[vm] = true
		}
	}
	a.classify(vms, storages)
	a.vmProbe = 100
	for vm := range vms {
		a.vmProbe = max(a.vmProbe, vm+1)
	}
	a.stProbe = unusedName("pxsubstrate-probe", storages)
	a.poolProbe = unusedName("pxsubstrate-probe", pools)
	a.objects = len(vms) + len(storages) + len(pools)
	return a
}

// indexEntries files the ACL entries by subject and returns the VMs,
// storages and pools their paths name.
func (a *auditor) indexEntries() (vms map[int]bool, storages, pools map[string]bool) {
	vms, storages, pools = map[int]bool{}, map[string]bool{}, map[string]bool{}
	for _, e := range a.cfg.ACEs() {
		ref := subjectRef{e.Kind, e.Subject}
		a.entries[ref] = append(a.entries[ref], e)
		switch rest, _ := strings.CutPrefix(e.Path, "/"); {
		case strings.HasPrefix(rest, "vms/"):
			if id, err := strconv.Atoi(rest[4:]); err == nil && strconv.Itoa(id) == rest[4:] {
				vms[id] = true
			}
		case strings.HasPrefix(rest, "storage/") && !strings.Contains(rest[8:], "/"):
			storages[rest[8:]] = true
		case strings.HasPrefix(rest, "pool/"):
			pools[rest[5:]] = true
		}
	}
	return vms, storages, pools
}

func addAll(m map[string]bool, lists ...[]string) map[string]bool {
	for _, l := range lists {
		for _, s := range l {
			m[s] = true
		}
	}
	return m
}

func (a *auditor) classify(vms map[int]bool, storages map[string]bool) {
	for vm := range vms {
		if len(a.vmPools[vm]) > 0 {
			a.pooledVMs = append(a.pooledVMs, vm)
		} else {
			a.unpooledVMs = append(a.unpooledVMs, vm)
		}
	}
	for s := range storages {
		if len(a.storagePools[s]) > 0 {
			a.pooledSt = append(a.pooledSt, s)
		} else {
			a.unpooledSt = append(a.unpooledSt, s)
		}
	}
	slices.Sort(a.pooledVMs)
	slices.Sort(a.unpooledVMs)
	slices.Sort(a.pooledSt)
	slices.Sort(a.unpooledSt)
}

func unusedName(base string, taken map[string]bool) string {
	name := base
	for i := 1; taken[name]; i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	return name
}

// permissioner is what the audit asks: the privileges of an auth id on a path.
type permissioner interface {
	Permissions(authID, path string) pveacl.PrivSet
}

// tenantOfPool returns the tenant owning a pool (its pool or one nested in it).
func (a *auditor) tenantOfPool(pool string) (int, bool) {
	for p := pool; p != ""; p = pveacl.PoolParent(p) {
		if i, ok := a.poolTenant[p]; ok {
			return i, true
		}
	}
	return 0, false
}

func (a *auditor) ownPool(i int, pool string) bool {
	j, ok := a.tenantOfPool(pool)
	return ok && j == i
}

// ownVM: a VM is the tenant's when its specification lists it, or when it
// sits in the tenant's pool and no other tenant lists it.
func (a *auditor) ownVM(i, vm int) bool {
	if j, ok := a.declaredVM[vm]; ok {
		return j == i
	}
	return slices.ContainsFunc(a.vmPools[vm], func(p string) bool { return a.ownPool(i, p) })
}

// ownStorage: likewise; a shared storage is no tenant's.
func (a *auditor) ownStorage(i int, s string) bool {
	if j, ok := a.declaredSt[s]; ok {
		return j == i
	}
	return slices.ContainsFunc(a.storagePools[s], func(p string) bool { return a.ownPool(i, p) })
}

// relevance is where a subject's (and, for a token, its user's) entries
// sit: any entry singles out its own path, a propagating one also the pools
// nested below a pool path.
type relevance struct {
	exact map[string]bool
	prop  map[string]bool
}

func (a *auditor) relevance(subject string) relevance {
	r := relevance{exact: map[string]bool{}, prop: map[string]bool{}}
	addEntries := func(ref subjectRef) {
		for _, e := range a.entries[ref] {
			r.exact[e.Path] = true
			if e.Propagate {
				r.prop[e.Path] = true
			}
		}
	}
	user := subject
	if pveacl.IsTokenID(subject) {
		addEntries(subjectRef{pveacl.KindToken, subject})
		user, _, _ = pveacl.ParseTokenID(subject)
	}
	addEntries(subjectRef{pveacl.KindUser, user})
	for _, g := range a.groupsOf[user] {
		addEntries(subjectRef{pveacl.KindGroup, g})
	}
	return r
}

func (r relevance) specificPool(pool string) bool {
	if r.exact[pveacl.PoolPath(pool)] {
		return true
	}
	for p := pveacl.PoolParent(pool); p != ""; p = pveacl.PoolParent(p) {
		if r.prop[pveacl.PoolPath(p)] {
			return true
		}
	}
	return false
}

func (a *auditor) specificVM(r relevance, vm int) bool {
	return r.exact[pveacl.VMPath(vm)] || slices.ContainsFunc(a.vmPools[vm], r.specificPool)
}

func (a *auditor) specificStorage(r relevance, s string) bool {
	return r.exact[pveacl.StoragePath(s)] || slices.ContainsFunc(a.storagePools[s], r.specificPool)
}

// cloneable is what a tenant may hold on a template it lists: enough to
// find it and clone it, nothing that changes it.
var cloneable = pveacl.NewPrivSet("VM.Audit", "VM.Clone")

// linkedCloneable is what a tenant may hold on a storage it lists under
// linkedCloneStorages: what PVE checks there for a linked clone.
var linkedCloneable = pveacl.NewPrivSet("Datastore.AllocateSpace")

// reach looks for privileges of subject on objects foreign to tenant i; on
// a template the tenant lists, only privileges beyond VM.Audit and
// VM.Clone count (unless the template is another tenant's VM, by the
// specification or by its pool on the cluster: tenantplan's
// OtherTenantsVM), and on a storage it lists for linked clones only those
// beyond Datastore.AllocateSpace.
func (a *auditor) reach(i int, subject string) {
	r := a.relevance(subject)
	tn := a.tenants[i]
	allowed, taken := map[string]pveacl.PrivSet{}, map[string]string{}
	poolsOf := func(vm int) []string { return a.vmPools[vm] }
	for _, vm := range tn.Templates {
		if c := a.spec.OtherTenantsVM(tn.Name, vm, poolsOf); len(c) > 0 {
			taken[pveacl.VMPath(vm)] = fmt.Sprintf(" (a template tenant %s lists, but tenant %s's VM, %s: a full clone copies its disks)", tn.Name, c[0].Tenant, c[0].How)
			continue
		}
		allowed[pveacl.VMPath(vm)] = cloneable
	}
	for _, s := range tn.LinkedCloneStorages {
		allowed[pveacl.StoragePath(s)] = linkedCloneable
	}
	report := func(path, what string) {
		p := a.perm.Permissions(subject, path)
		if ok, listed := allowed[path]; listed {
			p = p.Minus(ok)
		}
		if p.Empty() {
			return
		}
		if why, ok := taken[path]; ok && what == "" {
			what = why
		}
		a.add(Finding{Severity: SeverityError, Code: CodeCrossTenantReach, Tenant: tn.Name, Subject: subject,
			Path: path, Privileges: p.Names(),
			Message: fmt.Sprintf("%s holds %s on %s%s, outside tenant %s", subject, p.String(), path, what, tn.Name),
			Remedy: fmt.Sprintf("remove the entries that grant this: pxsubstrate acl perms --user-cfg /etc/pve/user.cfg --authid %s --path %s shows the result; look at /, %s and its pool",
				quote(subject), path, path)})
	}
	a.reachSingled(i, r, report)
	a.reachClasses(i, r, report)
}

// reachSingled checks, one by one, the foreign objects the entries name.
func (a *auditor) reachSingled(i int, r relevance, report func(path, what string)) {
	pools := a.specificPools(r)
	for _, pool := range pools {
		if !a.ownPool(i, pool) {
			report(pveacl.PoolPath(pool), "")
		}
	}
	for _, vm := range a.specificVMs(r, pools) {
		if !a.ownVM(i, vm) {
			report(pveacl.VMPath(vm), "")
		}
	}
	for _, s := range a.specificStorages(r, pools) {
		if !a.ownStorage(i, s) {
			report(pveacl.StoragePath(s), "")
		}
	}
}

// reachClasses checks one object of each class the entries do not single
// out; all objects of a class hold the same privileges. A never-used id
// stands in for an empty class, since such objects can appear at any time.
func (a *auditor) reachClasses(i int, r relevance, report func(path, what string)) {
	firstPool := a.poolProbe
	for _, p := range a.poolNames {
		if !a.ownPool(i, p) && !r.specificPool(p) {
			firstPool = p
			break
		}
	}
	report(pveacl.PoolPath(firstPool), " (as on every pool no entry names)")
	vmClass := func(vms []int, what string, probe bool) {
		for _, vm := range vms {
			if !a.ownVM(i, vm) && !a.specificVM(r, vm) {
				report(pveacl.VMPath(vm), what)
				return
			}
		}
		if probe {
			report(pveacl.VMPath(a.vmProbe), what)
		}
	}
	vmClass(a.unpooledVMs, " (as on every VM in no pool)", true)
	vmClass(a.pooledVMs, " (as on every VM of a foreign pool no entry names)", false)
	storageClass := func(list []string, what string, probe bool) {
		for _, s := range list {
			if !a.ownStorage(i, s) && !a.specificStorage(r, s) {
				report(pveacl.StoragePath(s), what)
				return
			}
		}
		if probe {
			report(pveacl.StoragePath(a.stProbe), what)
		}
	}
	storageClass(a.unpooledSt, " (as on every storage in no pool)", true)
	storageClass(a.pooledSt, " (as on every storage of a foreign pool no entry names)", false)
}

// specificPools lists the existing pools the relevance singles out.
func (a *auditor) specificPools(r relevance) []string {
	set := map[string]bool{}
	for p := range r.exact {
		name, ok := strings.CutPrefix(p, "/pool/")
		if !ok {
			continue
		}
		if _, exists := a.cfg.Pools[name]; exists {
			set[name] = true
		}
		if r.prop[p] {
			for _, child := range a.poolsUnder(name) {
				set[child] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// poolsUnder returns the pools nested below a pool, using the sorted names.
func (a *auditor) poolsUnder(pool string) []string {
	prefix := pool + "/"
	lo, _ := slices.BinarySearch(a.poolNames, prefix)
	hi := lo
	for hi < len(a.poolNames) && strings.HasPrefix(a.poolNames[hi], prefix) {
		hi++
	}
	return a.poolNames[lo:hi]
}

// specificVMs lists the VMs the relevance singles out: VMs named by an
// entry path and the members of singled-out pools.
func (a *auditor) specificVMs(r relevance, pools []string) []int {
	set := map[int]bool{}
	for p := range r.exact {
		if rest, ok := strings.CutPrefix(p, "/vms/"); ok {
			if id, err := strconv.Atoi(rest); err == nil && strconv.Itoa(id) == rest {
				set[id] = true
			}
		}
	}
	for _, pool := range pools {
		for _, vm := range a.cfg.Pools[pool].VMs {
			set[vm] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func (a *auditor) specificStorages(r relevance, pools []string) []string {
	set := map[string]bool{}
	for p := range r.exact {
		if rest, ok := strings.CutPrefix(p, "/storage/"); ok && !strings.Contains(rest, "/") {
			set[rest] = true
		}
	}
	for _, pool := range pools {
		for _, s := range a.cfg.Pools[pool].Storages {
			set[s] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// broader compares a tenant token's privileges with the roles meant for it
// on the paths where they can show: the top-level paths, its own pool,
// storages and a VM of its pool, and every path its entries name.
func (a *auditor) broader(i int, token string) {
	tn := a.tenants[i]
	allowed, ccm := tenantplan.TokenPrivileges(a.cfg.Version)
	if _, ccmID := tn.TokenIDs(); token == ccmID {
		allowed = ccm
	}
	paths := []string{"/", "/vms", "/storage", "/pool", "/nodes", "/sdn", "/access", pveacl.PoolPath(tn.Pool)}
	for _, s := range tn.AllStorages() {
		paths = append(paths, pveacl.StoragePath(s))
	}
	if vms := a.cfg.Pools[tn.Pool].VMs; len(vms) > 0 {
		paths = append(paths, pveacl.VMPath(vms[0]))
	}
	for p := range a.relevance(token).exact {
		paths = append(paths, p)
	}
	slices.SortFunc(paths, pveacl.ComparePaths)
	var extra pveacl.PrivSet
	first := ""
	for _, p := range slices.Compact(paths) {
		if x := a.perm.Permissions(token, p).Minus(allowed); !x.Empty() {
			extra = extra.Union(x)
			if first == "" {
				first = p
			}
		}
	}
	if extra.Empty() {
		return
	}
	a.add(Finding{Severity: SeverityWarning, Code: CodeTokenBroaderThanRole, Tenant: tn.Name, Subject: token, Path: first,
		Privileges: extra.Names(),
		Message:    fmt.Sprintf("%s holds %s beyond its roles (%s)", token, extra.String(), allowed.String()),
		Remedy:     "remove the extra entries of the token (and its user), and keep the token privilege-separated"})
}

// quote quotes an auth id for a shell command line ('!' needs it).
func quote(id string) string { return "'" + strings.ReplaceAll(id, "'", `'\''`) + "'" }
