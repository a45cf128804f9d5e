package audit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
)

// Finding codes of the PCI resource mappings (tenantplan's pciMappings).
const (
	// CodeForeignMappingReach: a tenant user or token holds Mapping.Use
	// or Mapping.Modify on a PCI mapping its tenant does not list
	// (another tenant's, or one no tenant lists), through an entry on
	// /mapping/pci/<id> or a propagating one on /mapping/pci, /mapping
	// or /; or Mapping.Modify on a mapping it lists, or on /mapping/pci
	// itself. Its VMs can take host devices that are not theirs: Use
	// passes a mapping's devices to a VM, Modify changes which devices a
	// mapping hands out (on /mapping/pci: creates and deletes mappings).
	CodeForeignMappingReach Code = "ForeignMappingReach"
	// CodeMissingMappingUse: the token that clones a tenant's VMs (its
	// own capmox token, else the platform's) lacks Mapping.Use on one of
	// the tenant's PCI mappings, so Proxmox refuses the clone of a
	// template with that device and a hostpciN: mapping=<id> setting.
	CodeMissingMappingUse Code = "MissingMappingUse"
)

// mappingCandidates are the PCI mapping paths worth asking about, sorted:
// every /mapping/pci/<id> an ACL entry names, every tenant's mappings, and
// an id no entry and no tenant names, standing for every mapping of the
// cluster that none singles out (propagating entries on /mapping/pci,
// /mapping and / reach them all alike).
func (a *auditor) mappingCandidates() []string {
	if a.mappingPaths != nil {
		return a.mappingPaths
	}
	ids := map[string]bool{}
	for k := range a.cfg.ACL {
		if id, ok := strings.CutPrefix(k.Path, "/mapping/pci/"); ok && !strings.Contains(id, "/") {
			ids[id] = true
		}
	}
	for _, tn := range a.tenants {
		for _, id := range tn.PCIMappings {
			ids[id] = true
		}
	}
	a.mappingProbe = unusedName("pxsubstrate-probe", ids)
	a.mappingPaths = []string{tenantplan.PCIMappingPath(a.mappingProbe)}
	for id := range ids {
		a.mappingPaths = append(a.mappingPaths, tenantplan.PCIMappingPath(id))
	}
	slices.SortFunc(a.mappingPaths, pveacl.ComparePaths)
	return a.mappingPaths
}

// mappingOwner returns the tenant that lists the PCI mapping at path.
func (a *auditor) mappingOwner(path string) (tenantplan.Tenant, bool) {
	for _, tn := range a.tenants {
		for _, id := range tn.PCIMappings {
			if tenantplan.PCIMappingPath(id) == path {
				return tn, true
			}
		}
	}
	return tenantplan.Tenant{}, false
}

// foreignMappings reports Mapping.Use and Mapping.Modify of a tenant
// subject on PCI mappings its tenant does not list, and Mapping.Modify
// on its own and on /mapping/pci.
func (a *auditor) foreignMappings(i int, subject string) {
	tn := a.tenants[i]
	flag := "--users"
	if pveacl.IsTokenID(subject) {
		flag = "--tokens"
	}
	report := func(path string, privs []string, why string) {
		a.add(Finding{Severity: SeverityError, Code: CodeForeignMappingReach, Tenant: tn.Name, Subject: subject, Path: path,
			Privileges: privs,
			Message:    fmt.Sprintf("%s holds %s on %s%s", subject, strings.Join(privs, ","), path, why),
			Remedy: fmt.Sprintf("remove the entry that grants it (pveum acl delete %s %s %s --roles <role>, or on /mapping/pci, /mapping or /: acl perms --authid %s --path %s shows the result), then plan and apply",
				path, flag, quote(subject), quote(subject), path)})
	}
	for _, p := range a.mappingCandidates() {
		held := a.perm.Permissions(subject, p)
		owner, listed := a.mappingOwner(p)
		own := listed && owner.Name == tn.Name
		var privs []string
		if held.Has("Mapping.Modify") {
			privs = append(privs, "Mapping.Modify")
		}
		if held.Has("Mapping.Use") && !own {
			privs = append(privs, "Mapping.Use")
		}
		switch {
		case len(privs) == 0:
		case own:
			report(p, privs, fmt.Sprintf(", a PCI mapping of tenant %s: Mapping.Modify changes which host devices the mapping hands out, another tenant's GPU included; the tenant needs Mapping.Use alone", tn.Name))
		case listed:
			report(p, privs, fmt.Sprintf(", tenant %s's PCI mapping: tenant %s's VMs can take that tenant's devices", owner.Name, tn.Name))
		case p == tenantplan.PCIMappingPath(a.mappingProbe):
			report(p, privs, fmt.Sprintf(" (as on every PCI mapping no entry names and no tenant lists): tenant %s's VMs can take host devices that are not theirs", tn.Name))
		default:
			report(p, privs, fmt.Sprintf(", a PCI mapping tenant %s does not list: its VMs can take that mapping's host devices", tn.Name))
		}
	}
	if a.perm.Permissions(subject, "/mapping/pci").Has("Mapping.Modify") {
		report("/mapping/pci", []string{"Mapping.Modify"}, ": it can create a PCI mapping of any host device and delete every mapping")
	}
}

// mappingUse checks that the token that clones each tenant's VMs (its own
// capmox token, else the platform's) holds Mapping.Use on every PCI
// mapping the tenant lists.
func (a *auditor) mappingUse() {
	for _, tn := range a.tenants {
		id := tn.CapmoxTokenID()
		if id == "" && a.spec.Platform.Capmox != nil {
			id = a.spec.Platform.Capmox.TokenID()
		}
		if _, ok := a.cfg.Token(id); id == "" || !ok {
			continue
		}
		for _, m := range tn.PCIMappings {
			path := tenantplan.PCIMappingPath(m)
			if a.perm.Permissions(id, path).Has("Mapping.Use") {
				continue
			}
			a.add(Finding{Severity: SeverityError, Code: CodeMissingMappingUse, Tenant: tn.Name, Subject: id, Path: path,
				Message: fmt.Sprintf("%s lacks Mapping.Use on %s: Proxmox refuses tenant %s's clone of a template with hostpciN: mapping=%s, and that setting on its VMs", id, path, tn.Name, m),
				Remedy:  fmt.Sprintf("pveum acl modify %s --tokens %s --roles %s --propagate 0, for the token and its user (or plan and apply)", path, quote(id), tenantplan.RoleMapping)})
		}
	}
}

// platformMappings names the tenants on all of whose PCI mappings the
// platform's capmox token id holds Mapping.Use, sorted.
func (a *auditor) platformMappings(id string) []string {
	var out []string
	for _, tn := range a.tenants {
		if len(tn.PCIMappings) > 0 && !slices.ContainsFunc(tn.PCIMappings, func(m string) bool {
			return !a.perm.Permissions(id, tenantplan.PCIMappingPath(m)).Has("Mapping.Use")
		}) {
			out = append(out, tn.Name)
		}
	}
	return out
}
