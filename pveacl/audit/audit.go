package audit

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// Severity ranks a finding. An error is a leak or a configuration that
// leaks as soon as something is added; a warning widens a blast radius;
// info is worth knowing.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

func (s Severity) rank() int {
	switch s {
	case SeverityError:
		return 0
	case SeverityWarning:
		return 1
	}
	return 2
}

// Code identifies the kind of a finding; codes are stable.
type Code string

// Finding codes.
const (
	// CodeCrossTenantReach: a tenant user or token has privileges on an
	// object of another tenant, in no pool, or on a shared storage.
	CodeCrossTenantReach Code = "CrossTenantReach"
	// CodeSharedTenantStorage: a storage is a member of two tenants' pools.
	CodeSharedTenantStorage Code = "SharedTenantStorage"
	// CodePropagatingTopLevelACL: a tenant subject holds a propagating
	// entry on /, /vms, /storage or /pool.
	CodePropagatingTopLevelACL Code = "PropagatingTopLevelACL"
	// CodeTokenWithoutPrivsep: a tenant token is not privilege-separated.
	CodeTokenWithoutPrivsep Code = "TokenWithoutPrivsep"
	// CodeTenantUserInGroup: a tenant user is in a group that has ACL entries.
	CodeTenantUserInGroup Code = "TenantUserInGroup"
	// CodeTokenBroaderThanRole: a tenant token holds privileges beyond the
	// roles meant for it.
	CodeTokenBroaderThanRole Code = "TokenBroaderThanRole"
	// CodeNestedTenantPool: a pool is nested in a tenant's pool.
	CodeNestedTenantPool Code = "NestedTenantPool"
	// CodePlatformWideToken: the platform's capmox token reaches every
	// tenant (its pool, and Mapping.Use on its PCI mappings).
	CodePlatformWideToken Code = "PlatformWideToken"
	// CodeTenantIncomplete: a tenant's user, token, pool or storage is missing.
	CodeTenantIncomplete Code = "TenantIncomplete"
	// CodeForeignVolume: a tenant's dedicated storage holds a volume of a
	// guest outside the tenant (another tenant's, a template's).
	CodeForeignVolume Code = "ForeignVolume"
	// CodeMissingSDNUse: the token that clones a tenant's VMs lacks
	// SDN.Use on one of the tenant's bridges or VLANs, so Proxmox refuses
	// the NIC when capmox configures the clone.
	CodeMissingSDNUse Code = "MissingSDNUse"
	// CodeLeftoverVolume: a tenant's storage holds a volume the Proxmox
	// CSI driver made for a cluster that no longer exists.
	CodeLeftoverVolume Code = "LeftoverVolume"
)

// Finding is one result of an audit.
type Finding struct {
	Severity   Severity `json:"severity"`
	Code       Code     `json:"code"`
	Tenant     string   `json:"tenant,omitempty"`
	Subject    string   `json:"subject,omitempty"`
	Path       string   `json:"path,omitempty"`
	Privileges []string `json:"privileges,omitempty"`
	Message    string   `json:"message"`
	Remedy     string   `json:"remedy"`
}

// Report is the outcome of an audit.
type Report struct {
	Findings []Finding `json:"findings"`
	// Tenants, Subjects and Objects count what was checked: tenants, their
	// users and tokens, and the objects foreign to at least one tenant.
	Tenants  int `json:"tenants"`
	Subjects int `json:"subjects"`
	Objects  int `json:"objects"`
}

// HasErrors reports whether an error-level finding exists.
func (r Report) HasErrors() bool { return r.Count(SeverityError) > 0 }

// Count returns the number of findings of a severity.
func (r Report) Count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// Codes returns the distinct codes found, sorted.
func (r Report) Codes() []Code {
	var out []Code
	for _, f := range r.Findings {
		if !slices.Contains(out, f.Code) {
			out = append(out, f.Code)
		}
	}
	slices.Sort(out)
	return out
}

// Run proves or disproves the isolation of the tenants on cfg, computing
// effective permissions exactly as Proxmox VE does. For every tenant user
// and every token of that user, the privileges on every foreign object
// (other pools, their VMs and storages, VMs and storages in no pool, shared
// storages) must be empty; anything else is a CrossTenantReach finding.
// Objects that no ACL entry of the subject singles out behave alike, so
// the audit checks one of each such class (and a never-seen VM, storage
// and pool id) plus every object the subject's entries name, which keeps it
// linear in the number of tenants. The other findings are listed with Code.
func Run(cfg *pveacl.Config, spec *tenantplan.Tenants) (Report, error) {
	return RunWith(cfg, spec, Options{})
}

// run performs every check and returns the report.
func (a *auditor) run() Report {
	for i := range a.tenants {
		a.auditTenant(i)
	}
	a.sharedStorages()
	a.foreignVolumes()
	a.leftoverVolumes()
	a.platformToken()
	a.platformHA()
	a.sdnUse()
	a.mappingUse()
	a.vmIDRanges()
	sortFindings(a.findings)
	return Report{Findings: a.findings, Tenants: len(a.tenants), Subjects: a.subjects, Objects: a.objects}
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Severity != b.Severity {
			return a.Severity.rank() < b.Severity.rank()
		}
		for _, c := range [][2]string{{string(a.Code), string(b.Code)}, {a.Tenant, b.Tenant}, {a.Subject, b.Subject}} {
			if c[0] != c[1] {
				return c[0] < c[1]
			}
		}
		return pveacl.ComparePaths(a.Path, b.Path) < 0
	})
}

func (a *auditor) add(f Finding) { a.findings = append(a.findings, f) }

// auditTenant runs every per-tenant check.
func (a *auditor) auditTenant(i int) {
	tn := a.tenants[i]
	a.incomplete(tn)
	a.nestedPools(tn)
	u, ok := a.cfg.Users[tn.User]
	if !ok {
		return
	}
	a.groups(tn)
	subjects := []string{tn.User}
	for _, name := range slices.Sorted(maps.Keys(u.Tokens)) {
		id := pveacl.TokenID(tn.User, name)
		subjects = append(subjects, id)
		if !u.Tokens[name].Privsep {
			a.add(Finding{Severity: SeverityError, Code: CodeTokenWithoutPrivsep, Tenant: tn.Name, Subject: id,
				Message: fmt.Sprintf("token %s is not privilege-separated, so it holds every privilege of %s", id, tn.User),
				Remedy:  fmt.Sprintf("pveum user token modify %s %s --privsep 1, then grant the token its own ACL entries", tn.User, name)})
		}
	}
	for _, s := range subjects {
		a.subjects++
		a.topLevel(tn.Name, s, "or grant on /pool/"+tn.Pool+" instead")
		a.reach(i, s)
		a.foreignSDN(i, s)
		a.foreignMappings(i, s)
	}
	csi, ccm := tn.TokenIDs()
	for _, id := range []string{csi, ccm} {
		if _, ok := a.cfg.Token(id); ok {
			a.broader(i, id)
		}
	}
}

func (a *auditor) incomplete(tn tenantplan.Tenant) {
	var missing []string
	if _, ok := a.cfg.Users[tn.User]; !ok {
		missing = append(missing, "user "+tn.User)
	}
	csi, ccm := tn.TokenIDs()
	for _, id := range []string{csi, ccm, tn.CapmoxTokenID()} {
		if _, ok := a.cfg.Token(id); id != "" && !ok {
			missing = append(missing, "token "+id)
		}
	}
	pool, ok := a.cfg.Pools[tn.Pool]
	if !ok {
		missing = append(missing, "pool "+tn.Pool)
	}
	for _, s := range tn.AllStorages() {
		if _, in := slices.BinarySearch(pool.Storages, s); ok && !in {
			missing = append(missing, fmt.Sprintf("storage %s in pool %s", s, tn.Pool))
		}
	}
	if len(missing) > 0 {
		a.add(Finding{Severity: SeverityWarning, Code: CodeTenantIncomplete, Tenant: tn.Name,
			Message: "missing: " + strings.Join(missing, ", "),
			Remedy:  "run pxsubstrate acl plan for these tenants and apply it"})
	}
}

func (a *auditor) nestedPools(tn tenantplan.Tenant) {
	for _, name := range a.poolsUnder(tn.Pool) {
		a.add(Finding{Severity: SeverityWarning, Code: CodeNestedTenantPool, Tenant: tn.Name, Path: pveacl.PoolPath(name),
			Message: fmt.Sprintf("pool %s is nested in the tenant's pool %s", name, tn.Pool),
			Remedy:  fmt.Sprintf("move its members to pool %s or to another tenant's pool and delete it", tn.Pool)})
	}
}

func (a *auditor) groups(tn tenantplan.Tenant) {
	for _, g := range a.groupsOf[tn.User] {
		paths := a.ev.EntryPaths(pveacl.KindGroup, g)
		if len(paths) == 0 {
			continue
		}
		a.add(Finding{Severity: SeverityWarning, Code: CodeTenantUserInGroup, Tenant: tn.Name, Subject: tn.User, Path: paths[0],
			Message: fmt.Sprintf("%s is a member of group %s, which holds ACL entries on %s", tn.User, g, strings.Join(paths, ", ")),
			Remedy:  fmt.Sprintf("remove %s from group %s: grant tenants only their own entries", tn.User, g)})
	}
}

var topLevelPaths = map[string]bool{"/": true, "/vms": true, "/storage": true, "/pool": true}

// topLevel reports subject's propagating entries on the top-level paths;
// instead is the advice after the fix.
func (a *auditor) topLevel(tenant, subject, instead string) {
	kind := pveacl.KindUser
	if pveacl.IsTokenID(subject) {
		kind = pveacl.KindToken
	}
	byPath := map[string][]string{}
	for _, e := range a.entries[subjectRef{kind, subject}] {
		if e.Propagate && topLevelPaths[e.Path] {
			byPath[e.Path] = append(byPath[e.Path], e.Role)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(byPath)) {
		fix := tenantplan.Change{Op: tenantplan.OpSetACL, Path: p, Kind: kind, Subject: subject, Roles: byPath[p]}
		a.add(Finding{Severity: SeverityError, Code: CodePropagatingTopLevelACL, Tenant: tenant, Subject: subject, Path: p,
			Message: fmt.Sprintf("%s holds %s on %s with propagate=1, which reaches every object below it", subject, strings.Join(byPath[p], ","), p),
			Remedy:  fmt.Sprintf("%s (%s)", tenantplan.PveumCommand(fix), instead)})
	}
}

// foreignVolumes reports volumes of other guests on tenants' storages.
func (a *auditor) foreignVolumes() {
	for _, f := range tenantplan.ForeignVolumes(a.spec, a.cfg) {
		a.add(Finding{Severity: SeverityError, Code: CodeForeignVolume, Tenant: f.Tenant, Path: pveacl.StoragePath(f.Storage),
			Message: f.String() + ": the tenant's CSI token holds Datastore.Allocate there and can free or read it",
			Remedy:  "move the volume to a storage of its guest's owner, or give the tenant a storage only its guests use"})
	}
}

func (a *auditor) sharedStorages() {
	for _, s := range slices.Sorted(maps.Keys(a.storagePools)) {
		var owners []string
		for _, p := range a.storagePools[s] {
			if i, ok := a.tenantOfPool(p); ok && !slices.Contains(owners, a.tenants[i].Name) {
				owners = append(owners, a.tenants[i].Name)
			}
		}
		if len(owners) < 2 {
			continue
		}
		sort.Strings(owners)
		a.add(Finding{Severity: SeverityError, Code: CodeSharedTenantStorage, Path: pveacl.StoragePath(s),
			Message: fmt.Sprintf("storage %s is in the pools of tenants %s, so each reaches the other's volumes", s, strings.Join(owners, ", ")),
			Remedy:  "give every tenant a dedicated storage and remove this one from all but one tenant pool"})
	}
}

// sdnUse checks that the token that clones each tenant's VMs (its own
// capmox token, else the platform's) holds SDN.Use on every bridge and
// VLAN the tenant declares.
func (a *auditor) sdnUse() {
	for _, tn := range a.tenants {
		id := tn.CapmoxTokenID()
		if id == "" && a.spec.Platform.Capmox != nil {
			id = a.spec.Platform.Capmox.TokenID()
		}
		if id == "" {
			continue
		}
		if _, ok := a.cfg.Token(id); !ok {
			continue
		}
		for _, n := range tn.Networks {
			for _, path := range n.SDNPaths() {
				if a.perm.Permissions(id, path).Has("SDN.Use") {
					continue
				}
				a.add(Finding{Severity: SeverityError, Code: CodeMissingSDNUse, Tenant: tn.Name, Subject: id, Path: path,
					Message: fmt.Sprintf("%s lacks SDN.Use on %s: Proxmox refuses a NIC there when capmox configures tenant %s's clone", id, path, tn.Name),
					Remedy:  fmt.Sprintf("pveum acl modify %s --tokens %s --roles PVESDNUser --propagate 0 (or plan and apply)", path, quote(id))})
			}
		}
	}
}

func (a *auditor) platformToken() {
	c := a.spec.Platform.Capmox
	if c == nil {
		return
	}
	id := c.TokenID()
	if _, ok := a.cfg.Token(id); !ok {
		return
	}
	reached := 0
	for _, tn := range a.tenants {
		if !a.perm.Permissions(id, pveacl.PoolPath(tn.Pool)).Empty() {
			reached++
		}
	}
	mapped := a.platformMappings(id)
	if reached < 2 && len(mapped) < 2 {
		return
	}
	msg := fmt.Sprintf("the capmox token %s reaches the pools of %d tenants", id, reached)
	if len(mapped) > 0 {
		msg += fmt.Sprintf(" and holds Mapping.Use on the PCI mappings of %d (%s), so it can give a VM of any tenant another tenant's GPU", len(mapped), strings.Join(mapped, ", "))
	}
	a.add(Finding{Severity: SeverityInfo, Code: CodePlatformWideToken, Subject: id, Path: "/",
		Message: msg + ": it is platform-wide by design",
		Remedy:  "keep its secret in the management cluster only, never in a tenant cluster or a log"})
}
