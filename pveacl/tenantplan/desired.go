package tenantplan

import (
	"fmt"
	"slices"
	"sort"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// The custom roles the plan manages. None starts with the reserved PVE
// prefix.
const (
	// RoleCSI lets the CSI controller see tenant VMs and attach disks.
	RoleCSI = "CozyCSI"
	// RoleCSIStorage lets the CSI controller allocate and free volumes on a
	// tenant storage (volumes owned by another VMID need Datastore.Allocate).
	RoleCSIStorage = "CozyCSIStorage"
	// RoleCCM lets the cloud-controller-manager read VMs and the guest agent.
	RoleCCM = "CozyCCM"
	// RoleCapmox is the cluster-api provider's role for creating VMs.
	RoleCapmox = "CozyCapmox"
	// RoleClone lets a tenant's capmox token find and clone a template.
	RoleClone = "CozyClone"
	// RoleNodeAudit lets a tenant's capmox token read the nodes' status
	// (GET /nodes/{node}/status, which capmox reads before every clone,
	// start and delete, and for its memory scheduling) and the cluster's
	// (GET /cluster/status, before it checks a VM id): Sys.Audit on
	// /nodes and on / alone, nothing else.
	RoleNodeAudit = "CozyNodeAudit"
	// RoleHA lets the platform's pool HA token read and change the HA
	// resources and rules (pve-ha-manager's API checks Sys.Audit and
	// Sys.Console on / alone); granted on / without propagation, it
	// reaches no node console and no VM.
	RoleHA = "CozyHA"
	// RoleLinkedClone lets a tenant's capmox token make linked clones of
	// templates whose disks live on a storage outside the tenant.
	RoleLinkedClone = "CozyLinkedClone"
	// RoleMapping lets the capmox token that clones a tenant's VMs use
	// the tenant's PCI resource mappings (Mapping.Use on
	// /mapping/pci/<id>, which a clone of a template with such a device
	// and a hostpciN: mapping=<id> setting need). It holds no
	// Mapping.Audit: neither needs to read the mapping.
	RoleMapping = "CozyMapping"
)

// managedRoles holds the privileges of the roles the plan creates, per
// version. CozyCCM reads the guest agent through VM.Monitor on PVE 8 and
// VM.GuestAgent.Audit on PVE 9.
var managedRoles = map[pveacl.Version]map[string][]string{pveacl.PVE8: managedRolesOf(pveacl.PVE8), pveacl.PVE9: managedRolesOf(pveacl.PVE9)}

func managedRolesOf(v pveacl.Version) map[string][]string {
	agent := "VM.GuestAgent.Audit"
	if v == pveacl.PVE8 {
		agent = "VM.Monitor"
	}
	roles := map[string][]string{
		RoleCSI:         {"VM.Audit", "VM.Config.Disk"},
		RoleCSIStorage:  {"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.Audit"},
		RoleCCM:         {"VM.Audit", agent},
		RoleClone:       {"VM.Audit", "VM.Clone"},
		RoleLinkedClone: {"Datastore.AllocateSpace"},
		RoleMapping:     {"Mapping.Use"},
		RoleNodeAudit:   {"Sys.Audit"},
		RoleHA:          {"Sys.Audit", "Sys.Console"},
		RoleCapmox: {"Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.AllocateTemplate", "Datastore.Audit", "Pool.Audit", "Sys.Audit",
			"VM.Allocate", "VM.Audit", "VM.Clone", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Cloudinit",
			"VM.Config.Disk", "VM.Config.HWType", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options",
			"VM.Migrate", "VM.PowerMgmt", agent},
	}
	for _, privs := range roles {
		sort.Strings(privs)
	}
	return roles
}

// CapmoxComment ends the comment of every capmox token a plan creates.
const CapmoxComment = "cluster-api provider"

// HAComment ends the comment of the pool HA user and token.
const HAComment = "pool HA"

// desiredState is what the tenants ask of the cluster.
type desiredState struct {
	version pveacl.Version
	roles   map[string][]string
	users   map[string]string // user id -> comment
	tokens  map[string]string // full token id -> comment
	pools   map[string]pveacl.Pool
	acl     map[pveacl.ACLKey]bool
	managed map[subjectRef]bool // subjects whose other ACL entries are removed
}

type subjectRef struct {
	kind pveacl.SubjectKind
	id   string
}

func buildDesired(t *Tenants, v pveacl.Version) desiredState {
	d := desiredState{version: v, roles: map[string][]string{}, users: map[string]string{},
		tokens: map[string]string{}, pools: map[string]pveacl.Pool{}, acl: map[pveacl.ACLKey]bool{},
		managed: map[subjectRef]bool{}}
	if c := t.Platform.Capmox; c != nil {
		d.platform(*c, CapmoxComment, true, RoleCapmox)
	}
	if c := t.Platform.HA; c != nil {
		d.platform(*c, HAComment, false, RoleHA)
	}
	for _, tn := range t.Tenants {
		d.tenant(tn, t.Platform.Capmox)
	}
	for pool := range d.pools {
		for parent := pveacl.PoolParent(pool); parent != ""; parent = pveacl.PoolParent(parent) {
			if _, ok := d.pools[parent]; !ok {
				d.pools[parent] = pveacl.Pool{Comment: "pxsubstrate tenant pools"}
			}
		}
	}
	return d
}

// platform records a platform user and its token with role on /.
func (d *desiredState) platform(c Credential, comment string, propagate bool, role string) {
	d.users[c.User] = "pxsubstrate platform: " + comment
	d.tokens[c.TokenID()] = "pxsubstrate platform: " + comment
	d.managed[subjectRef{pveacl.KindUser, c.User}] = true
	d.managed[subjectRef{pveacl.KindToken, c.TokenID()}] = true
	d.grant("/", pveacl.KindUser, c.User, propagate, role)
	d.grant("/", pveacl.KindToken, c.TokenID(), propagate, role)
}

// grant records desired entries, and the managed roles they name.
func (d *desiredState) grant(path string, kind pveacl.SubjectKind, subject string, propagate bool, roles ...string) {
	all := managedRoles[d.version]
	for _, r := range roles {
		d.acl[pveacl.ACLKey{Path: path, Kind: kind, Subject: subject, Role: r}] = propagate
		if _, have := d.roles[r]; !have {
			if privs, ok := all[r]; ok {
				d.roles[r] = slices.Clone(privs)
			}
		}
	}
}

// tenant records what one tenant needs.
func (d *desiredState) tenant(tn Tenant, capmox *Credential) {
	comment := fmt.Sprintf("pxsubstrate tenant %s", tn.Name)
	csi, ccm := tn.TokenIDs()
	d.users[tn.User] = comment
	d.tokens[csi] = comment + ": CSI controller"
	d.tokens[ccm] = comment + ": cloud-controller-manager"
	for _, s := range []subjectRef{{pveacl.KindUser, tn.User}, {pveacl.KindToken, csi}, {pveacl.KindToken, ccm}} {
		d.managed[s] = true
	}
	p := d.pools[tn.Pool]
	p.Comment = comment
	for _, vm := range tn.VMs {
		p.AddVM(vm)
	}
	for _, s := range tn.AllStorages() {
		p.AddStorage(s)
	}
	d.pools[tn.Pool] = p
	pool := pveacl.PoolPath(tn.Pool)
	d.grant(pool, pveacl.KindUser, tn.User, false, RoleCSI, RoleCCM)
	d.grant(pool, pveacl.KindToken, csi, false, RoleCSI)
	d.grant(pool, pveacl.KindToken, ccm, false, RoleCCM)
	for _, s := range tn.AllStorages() {
		d.grant(pveacl.StoragePath(s), pveacl.KindUser, tn.User, false, RoleCSIStorage)
		d.grant(pveacl.StoragePath(s), pveacl.KindToken, csi, false, RoleCSIStorage)
	}
	d.grant("/", pveacl.KindUser, tn.User, false, pveacl.RoleAuditor)
	d.grant("/", pveacl.KindToken, ccm, false, pveacl.RoleAuditor)
	if capmox != nil {
		for _, n := range tn.Networks {
			for _, path := range n.SDNPaths() {
				d.grant(path, pveacl.KindUser, capmox.User, false, pveacl.RoleSDNUser)
				d.grant(path, pveacl.KindToken, capmox.TokenID(), false, pveacl.RoleSDNUser)
			}
		}
		for _, id := range tn.PCIMappings {
			d.grant(PCIMappingPath(id), pveacl.KindUser, capmox.User, false, RoleMapping)
			d.grant(PCIMappingPath(id), pveacl.KindToken, capmox.TokenID(), false, RoleMapping)
		}
	}
	d.tenantCapmox(tn, comment)
}

// tenantCapmox records the tenant's own capmox token: CozyCapmox on its
// pool only (which reaches the pool's VMs and storages, and the VMs it
// clones there), CozyClone on each template, CozyLinkedClone on each
// storage of linkedCloneStorages, SDN.Use on exactly its bridges and
// VLANs, CozyMapping (Mapping.Use) on exactly its PCI mappings, and
// CozyNodeAudit (Sys.Audit) on /nodes and on / alone, which
// capmox needs to read a node's and the cluster's status and PVE grants
// on no narrower path. CozyCapmox includes Datastore.AllocateTemplate and
// Datastore.Allocate, which reach only the pool's storages: capmox uploads
// each worker's bootstrap ISO to an ISO storage of the pool and deletes it
// once the node runs or the VM goes. Its user holds the same, since a privilege-separated
// token holds only what both hold.
func (d *desiredState) tenantCapmox(tn Tenant, comment string) {
	id := tn.CapmoxTokenID()
	if id == "" {
		return
	}
	d.tokens[id] = comment + ": " + CapmoxComment
	d.managed[subjectRef{pveacl.KindToken, id}] = true
	subjects := []subjectRef{{pveacl.KindUser, tn.User}, {pveacl.KindToken, id}}
	for _, s := range subjects {
		d.grant(pveacl.PoolPath(tn.Pool), s.kind, s.id, false, RoleCapmox)
		d.grant("/nodes", s.kind, s.id, true, RoleNodeAudit)
		d.grant("/", s.kind, s.id, false, RoleNodeAudit)
		for _, vm := range tn.Templates {
			d.grant(pveacl.VMPath(vm), s.kind, s.id, false, RoleClone)
		}
		for _, st := range tn.LinkedCloneStorages {
			d.grant(pveacl.StoragePath(st), s.kind, s.id, false, RoleLinkedClone)
		}
		for _, n := range tn.Networks {
			for _, path := range n.SDNPaths() {
				d.grant(path, s.kind, s.id, false, pveacl.RoleSDNUser)
			}
		}
		for _, m := range tn.PCIMappings {
			d.grant(PCIMappingPath(m), s.kind, s.id, false, RoleMapping)
		}
	}
}

// TokenPrivileges returns the privileges a plan for version v grants each
// tenant's CSI and CCM token: a token holding more is broader than its
// roles.
func TokenPrivileges(v pveacl.Version) (csi, ccm pveacl.PrivSet) {
	return rolePrivileges(v, RoleCSI, RoleCSIStorage), rolePrivileges(v, RoleCCM, pveacl.RoleAuditor)
}

// CapmoxPrivileges returns the privileges a plan for version v grants a
// tenant's capmox token on the tenant's pool: those of CozyCapmox. The
// controller's pool healing acts with that token, and its failure domains
// read the nodes' state with it.
func CapmoxPrivileges(v pveacl.Version) pveacl.PrivSet { return rolePrivileges(v, RoleCapmox) }

// HAPrivileges returns the privileges a plan for version v grants the
// platform's pool HA user and token, on / alone: those of CozyHA.
func HAPrivileges(v pveacl.Version) pveacl.PrivSet { return rolePrivileges(v, RoleHA) }

// rolePrivileges is the union of the privileges of roles as a plan for
// version v defines them (managed roles) or PVE does (built-in ones).
func rolePrivileges(v pveacl.Version, roles ...string) pveacl.PrivSet {
	managed, builtin := managedRoles[v], pveacl.BuiltinRoles(v)
	var s pveacl.PrivSet
	for _, r := range roles {
		privs, ok := managed[r]
		if !ok {
			privs = builtin[r]
		}
		s = s.Union(pveacl.NewPrivSet(privs...))
	}
	return s
}
