package audit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// CodeForeignSDNReach reports a tenant user or token with SDN.Use on an SDN path
// (a zone, bridge, VLAN or VNet) that is not one of its tenant's networks,
// so the tenant's VMs can join a network that is not theirs.
const CodeForeignSDNReach Code = "ForeignSDNReach"

// sdnCandidates are the SDN paths worth asking about: every ACL path under
// /sdn, every tenant's network paths, /sdn and /sdn/zones.
func (a *auditor) sdnCandidates() []string {
	if a.sdnPaths != nil {
		return a.sdnPaths
	}
	seen := map[string]bool{"/sdn": true, "/sdn/zones": true}
	for k := range a.cfg.ACL {
		if k.Path == "/sdn" || strings.HasPrefix(k.Path, "/sdn/") {
			seen[k.Path] = true
		}
	}
	for _, tn := range a.tenants {
		for _, n := range tn.Networks {
			for _, p := range n.SDNPaths() {
				seen[p] = true
			}
		}
	}
	a.sdnPaths = make([]string, 0, len(seen))
	for p := range seen {
		a.sdnPaths = append(a.sdnPaths, p)
	}
	slices.SortFunc(a.sdnPaths, pveacl.ComparePaths)
	return a.sdnPaths
}

// foreignSDN reports SDN.Use of a tenant subject outside its networks.
func (a *auditor) foreignSDN(i int, subject string) {
	tn := a.tenants[i]
	own := map[string]bool{}
	for _, n := range tn.Networks {
		for _, p := range n.SDNPaths() {
			own[p] = true
		}
	}
	flag := "--users"
	if pveacl.IsTokenID(subject) {
		flag = "--tokens"
	}
	for _, p := range a.sdnCandidates() {
		if own[p] || !a.perm.Permissions(subject, p).Has("SDN.Use") {
			continue
		}
		a.add(Finding{Severity: SeverityError, Code: CodeForeignSDNReach, Tenant: tn.Name, Subject: subject, Path: p,
			Privileges: []string{"SDN.Use"},
			Message: fmt.Sprintf("%s holds SDN.Use on %s, which is none of tenant %s's networks: its VMs can join a network that is not theirs",
				subject, p, tn.Name),
			Remedy: fmt.Sprintf("remove the entry that grants it (pveum acl delete %s %s %s --roles <role>, or on a parent path), then plan and apply",
				p, flag, quote(subject))})
	}
}
