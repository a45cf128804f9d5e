package pveacl

import (
	"fmt"
	"sort"
	"strings"
)

// Version is the major version of Proxmox VE whose privilege table applies.
// It decides which privileges exist and what the built-in roles contain.
type Version int

// The supported major versions.
const (
	PVE8 Version = 8
	PVE9 Version = 9
)

// DefaultVersion is used when no version is given.
const DefaultVersion = PVE9

// Validate reports whether v is a supported major version.
func (v Version) Validate() error {
	if v != PVE8 && v != PVE9 {
		return fmt.Errorf("%w: Proxmox VE major version %d is not supported: use 8 or 9", ErrInvalidVersion, int(v))
	}
	return nil
}

// tiers groups the privileges of one category the way pve-access-control
// does: root-only, admin, user and audit.
type tiers struct {
	root, admin, user, audit []string
}

type category struct {
	name string
	tiers
}

// categories returns the privilege catalogue of a version.
func categories(v Version) []category {
	vm := tiers{
		admin: []string{"VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network",
			"VM.Config.HWType", "VM.Config.Options", "VM.Allocate", "VM.Clone", "VM.Migrate",
			"VM.Snapshot", "VM.Snapshot.Rollback"},
		user:  []string{"VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.Backup", "VM.PowerMgmt"},
		audit: []string{"VM.Audit"},
	}
	if v == PVE8 {
		vm.admin = append(vm.admin, "VM.Monitor")
	} else {
		vm.admin = append(vm.admin, "VM.GuestAgent.Unrestricted", "VM.Replicate")
		vm.user = append(vm.user, "VM.GuestAgent.FileRead", "VM.GuestAgent.FileSystemMgmt", "VM.GuestAgent.FileWrite")
		vm.audit = append(vm.audit, "VM.GuestAgent.Audit")
	}
	return []category{
		{"VM", vm},
		{"Sys", tiers{
			root:  []string{"Sys.PowerMgmt", "Sys.Modify", "Sys.Incoming", "Sys.AccessNetwork"},
			admin: []string{"Sys.Console", "Sys.Syslog"},
			audit: []string{"Sys.Audit"},
		}},
		{"Datastore", tiers{
			admin: []string{"Datastore.Allocate", "Datastore.AllocateTemplate"},
			user:  []string{"Datastore.AllocateSpace"},
			audit: []string{"Datastore.Audit"},
		}},
		{"SDN", tiers{
			admin: []string{"SDN.Allocate", "SDN.Audit"},
			user:  []string{"SDN.Use"},
			audit: []string{"SDN.Audit"},
		}},
		{"User", tiers{
			root:  []string{"Realm.Allocate"},
			admin: []string{"User.Modify", "Group.Allocate", "Realm.AllocateUser"},
		}},
		{"Pool", tiers{
			admin: []string{"Pool.Allocate"},
			user:  []string{"Pool.Audit"},
			audit: []string{"Pool.Audit"},
		}},
		{"Mapping", tiers{
			admin: []string{"Mapping.Modify"},
			user:  []string{"Mapping.Use"},
			audit: []string{"Mapping.Audit"},
		}},
	}
}

// The special roles every configuration has.
const (
	RoleNoAccess      = "NoAccess"
	roleAdministrator = "Administrator"
	RoleAuditor       = "PVEAuditor"
	RoleSDNUser       = "PVESDNUser"
	permissionsModify = "Permissions.Modify"
)

// privTable is the privilege catalogue and the built-in roles of one version.
type privTable struct {
	valid    PrivSet            // every valid privilege
	builtins map[string]PrivSet // special role -> privileges
}

var tables = map[Version]*privTable{PVE8: buildTable(PVE8), PVE9: buildTable(PVE9)}

func buildTable(v Version) *privTable {
	t := &privTable{builtins: map[string]PrivSet{}}
	add := func(role string, privs ...string) {
		s := t.builtins[role]
		for _, p := range privs {
			s = s.with(p, false)
		}
		t.builtins[role] = s
	}
	t.valid = t.valid.with(permissionsModify, false)
	t.builtins[RoleNoAccess] = PrivSet{}
	for _, c := range categories(v) {
		all := [][]string{c.root, c.admin, c.user, c.audit}
		for _, list := range all {
			for _, p := range list {
				t.valid = t.valid.with(p, false)
			}
		}
		for _, list := range all[1:] {
			add("PVE"+c.name+"Admin", list...)
			add("PVEAdmin", list...)
		}
		if len(c.user) > 0 {
			add("PVE"+c.name+"User", c.user...)
			add("PVE"+c.name+"User", c.audit...)
		}
		add(RoleAuditor, c.audit...)
	}
	t.builtins["PVEAdmin"] = t.builtins["PVEAdmin"].without("Mapping.Modify")
	add("PVETemplateUser", "VM.Clone", "VM.Audit")
	t.builtins[roleAdministrator] = t.valid
	return t
}

func table(v Version) *privTable {
	if t, ok := tables[v]; ok {
		return t
	}
	return tables[DefaultVersion]
}

// privileges returns the sorted list of valid privileges of a version.
func privileges(v Version) []string { return table(v).valid.Names() }

// ValidPrivilege reports whether priv exists in version v.
func ValidPrivilege(v Version, priv string) bool { return table(v).valid.Has(priv) }

// BuiltinRoles returns the special roles of version v with their sorted
// privileges. They are never written to user.cfg and cannot be changed.
func BuiltinRoles(v Version) map[string][]string {
	out := map[string][]string{}
	for name, s := range table(v).builtins {
		out[name] = s.Names()
	}
	return out
}

// IsBuiltinRole reports whether name is a special role (in any version).
func IsBuiltinRole(name string) bool {
	_, ok := tables[PVE9].builtins[name]
	if !ok {
		_, ok = tables[PVE8].builtins[name]
	}
	return ok
}

// ParsePrivileges splits a privilege list the way PVE does (commas,
// semicolons and whitespace separate) and checks every name against the
// table of version v. The result is sorted and free of duplicates.
func ParsePrivileges(v Version, list string) ([]string, error) {
	var s PrivSet
	var bad []string
	for _, p := range SplitList(list) {
		if !ValidPrivilege(v, p) {
			bad = append(bad, p)
			continue
		}
		s = s.with(p, false)
	}
	if len(bad) > 0 {
		return nil, &privilegeError{Version: v, Privileges: bad}
	}
	return s.Names(), nil
}

// privilegeError lists privileges that do not exist in a version.
type privilegeError struct {
	Version    Version
	Privileges []string
}

func (e *privilegeError) Error() string {
	quoted := make([]string, len(e.Privileges))
	for i, p := range e.Privileges {
		quoted[i] = "'" + p + "'"
	}
	hint := ""
	for _, p := range e.Privileges {
		if p == "VM.Monitor" && e.Version == PVE9 {
			hint = " (PVE 9 replaced VM.Monitor with VM.GuestAgent.Audit and Sys.Audit)"
		}
		if strings.HasPrefix(p, "VM.GuestAgent.") && e.Version == PVE8 {
			hint = " (the VM.GuestAgent.* privileges exist from PVE 9 on; PVE 8 uses VM.Monitor)"
		}
	}
	return fmt.Sprintf("invalid privilege %s for PVE %d%s", strings.Join(quoted, ", "), int(e.Version), hint)
}

func (e *privilegeError) Unwrap() error { return errInvalidPrivilege }

// sortedKeys returns the keys of a string-keyed map in byte order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
