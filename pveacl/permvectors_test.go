package pveacl_test

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
)

// The scenarios of pve-access-control's perm-test1..8, restated as
// user.cfg fixtures, and every assertion of those tests: "roles" checks
// PVE::AccessControl::roles, "privs" checks RPCEnvironment::permissions.

const vecGroupsAndCustomers = `
user:joe@pve:1:
user:max@pve:1:
user:alex@pve:1:
user:sue@pve:1:
user:carol@pam:1:
group:testgroup1:joe@pve,max@pve,sue@pve:
group:testgroup2:alex@pve,carol@pam,sue@pve:
group:testgroup3:max@pve:
role:storage_manager:Datastore.AllocateSpace,Datastore.Audit:
role:customer:VM.Audit,VM.PowerMgmt:
role:vm_admin:VM.Audit,VM.Allocate,Permissions.Modify,VM.Console:
acl:1:/vms:@testgroup1:vm_admin:
acl:1:/vms/100/:alex@pve,max@pve:customer:
acl:1:/storage/nfs1:@testgroup2:storage_manager:
acl:1:/users:max@pve:Administrator:
acl:1:/vms/200:@testgroup3:storage_manager:
acl:1:/vms/200:@testgroup2:NoAccess:
acl:1:/vms/300:alex@pve:PVEVMAdmin:
acl:1:/vms/400:alex@pve:Administrator:
`

const vecTwoGroups = `
user:User1@pve:1:
user:User2@pve:1:
group:GroupA:User1@pve:
group:GroupB:User1@pve:
role:Role1:VM.PowerMgmt:
role:Role2:VM.Console:
`

const vecPropagation = `
user:User1@pve:1:
user:User2@pve:1:
group:GroupA:User1@pve,User2@pve:
group:GroupB:User1@pve,User2@pve:
role:Role1:VM.PowerMgmt:
role:Role2:VM.Console:
role:Role3:VM.Console:
acl:1:/vms:User1@pve:Role1:
acl:1:/vms/100/a/b:User1@pve:Role2:
acl:0:/kvm:User2@pve:Role2:
acl:0:/kvm/vms:User2@pve:Role1:
acl:0:/kvm/vms/100/a:User2@pve:Role3:
`

const vecPools = `
user:User1@pve:1:
user:User2@pve:1:
user:User3@pve:1:
user:User4@pve:1:
user:intern@pve:1:
group:DEVEL:User1@pve,User2@pve,User3@pve:
group:MARKETING:User1@pve,User4@pve:
group:INTERNS:intern@pve:
role:RoleDEVEL:VM.PowerMgmt:
role:RoleMARKETING:VM.Console:
role:RoleINTERN:VM.Audit:
role:RoleTEST1:VM.Console:
acl:1:/pool/devel:@DEVEL:RoleDEVEL:
acl:1:/pool/marketing:@MARKETING:RoleMARKETING:
acl:1:/pool/marketing/interns:@INTERNS:RoleINTERN:
acl:1:/vms:@DEVEL:RoleTEST1:
acl:1:/vms:User3@pve:NoAccess:
acl:1:/vms/300:@MARKETING:RoleTEST1:
pool:devel:MITS development:500,501,502:store1 store2:
pool:marketing:MITS marketing:600:store1:
pool:marketing/interns:MITS marketing intern:700:store3:
`

const vecPoolNoAccess = `
user:User1@pve:1:
role:Role1:VM.PowerMgmt:
acl:1:/pool/devel:User1@pve:NoAccess:
acl:1:/vms:User1@pve:Role1:
pool:devel:Development:100:store1:
`

const vecTokens = `
user:joe@pve:1:
user:max@pve:1:
token:max@pve!token::0:
token:max@pve!token2::1:
user:alex@pve:1:
user:sue@pve:1:
user:carol@pam:1:
token:carol@pam!token:
group:testgroup1:joe@pve,max@pve,sue@pve:
group:testgroup2:alex@pve,carol@pam,sue@pve:
group:testgroup3:max@pve:
role:storage_manager:Datastore.AllocateSpace,Datastore.Audit:
role:customer:VM.Audit,VM.PowerMgmt:
role:vm_admin:VM.Audit,VM.Allocate,VM.Console:
acl:1:/vms:@testgroup1:vm_admin:
acl:0:/vms/300:max@pve:customer:
acl:1:/vms/300:max@pve:vm_admin:
acl:1:/vms/100/:alex@pve,max@pve:customer:
acl:1:/storage/nfs1:@testgroup2:storage_manager:
acl:1:/users:max@pve:Administrator:
acl:1:/vms/200:@testgroup3:storage_manager:
acl:1:/vms/200:@testgroup2:NoAccess:
acl:1:/vms/200:carol@pam!token:vm_admin
acl:1:/vms/200:max@pve!token:storage_manager
acl:1:/vms/200:max@pve!token2:customer
acl:1:/vms/300:max@pve!token2:Administrator
`

type vecCheck struct {
	what   string // "roles" or "privs"
	authID string
	path   string
	want   string // sorted, comma-separated
}

const (
	pveVMAdmin9 = "VM.Allocate,VM.Audit,VM.Backup,VM.Clone,VM.Config.CDROM,VM.Config.CPU,VM.Config.Cloudinit," +
		"VM.Config.Disk,VM.Config.HWType,VM.Config.Memory,VM.Config.Network,VM.Config.Options," +
		"VM.Console,VM.GuestAgent.Audit,VM.GuestAgent.FileRead,VM.GuestAgent.FileSystemMgmt," +
		"VM.GuestAgent.FileWrite,VM.GuestAgent.Unrestricted,VM.Migrate,VM.PowerMgmt,VM.Replicate," +
		"VM.Snapshot,VM.Snapshot.Rollback"
	administrator9 = "Datastore.Allocate,Datastore.AllocateSpace,Datastore.AllocateTemplate,Datastore.Audit," +
		"Group.Allocate,Mapping.Audit,Mapping.Modify,Mapping.Use,Permissions.Modify,Pool.Allocate,Pool.Audit," +
		"Realm.Allocate,Realm.AllocateUser,SDN.Allocate,SDN.Audit,SDN.Use," +
		"Sys.AccessNetwork,Sys.Audit,Sys.Console,Sys.Incoming,Sys.Modify,Sys.PowerMgmt,Sys.Syslog,User.Modify," +
		pveVMAdmin9
)

func TestUpstreamPermissionVectors(t *testing.T) {
	cases := map[string]struct {
		reason string
		cfg    string
		checks []vecCheck
	}{
		"perm-test1": {
			reason: "user entries beat group entries at one level; deeper entries beat shallower ones; NoAccess from one group wipes the others; built-in role sizes",
			cfg:    vecGroupsAndCustomers,
			checks: []vecCheck{
				{"roles", "max@pve", "/", ""},
				{"roles", "max@pve", "/vms", "vm_admin"},
				{"roles", "max@pve", "/vms/100", "customer"},
				{"roles", "max@pve", "/vms/101", "vm_admin"},
				{"privs", "max@pve", "/", ""},
				{"privs", "max@pve", "/vms", "Permissions.Modify,VM.Allocate,VM.Audit,VM.Console"},
				{"privs", "max@pve", "/vms/100", "VM.Audit,VM.PowerMgmt"},
				{"privs", "alex@pve", "/vms", ""},
				{"privs", "alex@pve", "/vms/100", "VM.Audit,VM.PowerMgmt"},
				{"privs", "alex@pve", "/vms/300", pveVMAdmin9},
				{"privs", "alex@pve", "/vms/400", administrator9},
				{"roles", "max@pve", "/vms/200", "storage_manager"},
				{"roles", "joe@pve", "/vms/200", "vm_admin"},
				{"roles", "sue@pve", "/vms/200", "NoAccess"},
			},
		},
		"perm-test2": {
			reason: "the roles of two groups at one level are united",
			cfg:    vecTwoGroups + "acl:1:/vms:@GroupA:Role1:\nacl:1:/vms:@GroupB:Role2:\n",
			checks: []vecCheck{
				{"roles", "User1@pve", "/", ""},
				{"roles", "User2@pve", "/", ""},
				{"roles", "User1@pve", "/vms", "Role1,Role2"},
				{"roles", "User2@pve", "/vms", ""},
				{"roles", "User1@pve", "/vms/100", "Role1,Role2"},
			},
		},
		"perm-test3": {
			reason: "a deeper group entry replaces a shallower one; an empty path has no roles",
			cfg:    vecTwoGroups + "acl:1:/vms:@GroupA:Role1:\nacl:1:/vms/200:@GroupB:Role2:\n",
			checks: []vecCheck{
				{"roles", "User1@pve", "", ""},
				{"roles", "User2@pve", "", ""},
				{"roles", "User1@pve", "/vms/300", "Role1"},
				{"roles", "User1@pve", "/vms/200", "Role2"},
			},
		},
		"perm-test4": {
			reason: "a user's NoAccess beats its groups' roles",
			cfg: strings.Replace(vecTwoGroups, "GroupA:User1@pve:", "GroupA:User1@pve,User2@pve:", 1) +
				"acl:1:/vms:@GroupA:Role1:\nacl:1:/vms:User2@pve:NoAccess:\n",
			checks: []vecCheck{
				{"roles", "User1@pve", "/vms/300", "Role1"},
				{"roles", "User2@pve", "/vms/300", "NoAccess"},
			},
		},
		"perm-test5": {
			reason: "propagation: inherited down the tree, propagate=0 entries count only on their own path",
			cfg:    vecPropagation,
			checks: []vecCheck{
				{"roles", "User1@pve", "/vms", "Role1"},
				{"roles", "User1@pve", "/vms/100", "Role1"},
				{"roles", "User1@pve", "/vms/100/a", "Role1"},
				{"roles", "User1@pve", "/vms/100/a/b", "Role2"},
				{"roles", "User1@pve", "/vms/100/a/b/c", "Role2"},
				{"roles", "User1@pve", "/vms/200", "Role1"},
				{"roles", "User2@pve", "/kvm", "Role2"},
				{"roles", "User2@pve", "/kvm/vms", "Role1"},
				{"roles", "User2@pve", "/kvm/vms/100", ""},
				{"roles", "User2@pve", "/kvm/vms/100/a", "Role3"},
				{"roles", "User2@pve", "/kvm/vms/100/a/b", ""},
			},
		},
		"perm-test6": {
			reason: "pool roles reach member VMs and storages, unite over pools, are blocked on VMs by a user NoAccess, and nested pools inherit",
			cfg:    vecPools,
			checks: pools6Checks(),
		},
		"perm-test7": {
			reason: "a NoAccess on the pool beats the regular /vms entry",
			cfg:    vecPoolNoAccess,
			checks: []vecCheck{
				{"roles", "User1@pve", "/vms", "Role1"},
				{"roles", "User1@pve", "/vms/200", "Role1"},
				{"roles", "User1@pve", "/vms/100", "Role1"},
				{"privs", "User1@pve", "/vms/100", ""},
			},
		},
		"perm-test8": {
			reason: "tokens: privsep=0 (and an empty privsep field) means the user's roles; privsep=1 intersects with the user",
			cfg:    vecTokens,
			checks: []vecCheck{
				{"roles", "max@pve", "/", ""},
				{"roles", "max@pve", "/vms", "vm_admin"},
				{"roles", "max@pve", "/vms/100", "customer"},
				{"roles", "max@pve", "/vms/101", "vm_admin"},
				{"privs", "max@pve", "/", ""},
				{"privs", "max@pve", "/vms", "VM.Allocate,VM.Audit,VM.Console"},
				{"privs", "max@pve", "/vms/100", "VM.Audit,VM.PowerMgmt"},
				{"privs", "alex@pve", "/vms", ""},
				{"privs", "alex@pve", "/vms/100", "VM.Audit,VM.PowerMgmt"},
				{"roles", "max@pve", "/vms/200", "storage_manager"},
				{"roles", "joe@pve", "/vms/200", "vm_admin"},
				{"roles", "sue@pve", "/vms/200", "NoAccess"},
				{"roles", "carol@pam", "/vms/200", "NoAccess"},
				{"roles", "carol@pam!token", "/vms/200", "NoAccess"},
				{"roles", "max@pve!token", "/vms/200", "storage_manager"},
				{"roles", "max@pve!token2", "/vms/200", "customer"},
				{"privs", "max@pve!token2", "/vms/300", "VM.Allocate,VM.Audit,VM.Console,VM.PowerMgmt"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, _ := usercfg.Parse([]byte(tc.cfg), pveacl.PVE9)
			ev := pveacl.NewEvaluator(cfg)
			for _, c := range tc.checks {
				var got string
				if c.what == "roles" {
					got = strings.Join(slices.Sorted(maps.Keys(ev.Roles(c.authID, c.path))), ",")
				} else {
					got = ev.Permissions(c.authID, c.path).String()
				}
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("%s\n%s(%s, %q): -want +got:\n%s", tc.reason, c.what, c.authID, c.path, diff)
				}
			}
		})
	}
}

func pools6Checks() []vecCheck {
	out := []vecCheck{}
	for _, u := range []string{"User1@pve", "User2@pve", "User3@pve", "User4@pve"} {
		out = append(out, vecCheck{"roles", u, "", ""})
	}
	rolesAt := map[string][4]string{
		"/vms":     {"RoleTEST1", "RoleTEST1", "NoAccess", ""},
		"/vms/100": {"RoleTEST1", "RoleTEST1", "NoAccess", ""},
		"/vms/300": {"RoleTEST1", "RoleTEST1", "NoAccess", "RoleTEST1"},
	}
	paths := slices.Sorted(maps.Keys(rolesAt))
	sort.Strings(paths)
	for _, p := range paths {
		for i, want := range rolesAt[p] {
			out = append(out, vecCheck{"roles", []string{"User1@pve", "User2@pve", "User3@pve", "User4@pve"}[i], p, want})
		}
	}
	return append(out,
		vecCheck{"privs", "User1@pve", "/vms/500", "VM.Console,VM.PowerMgmt"},
		vecCheck{"privs", "User2@pve", "/vms/500", "VM.Console,VM.PowerMgmt"},
		vecCheck{"roles", "User3@pve", "/vms/500", "NoAccess"},
		vecCheck{"privs", "User3@pve", "/vms/500", ""},
		vecCheck{"roles", "User4@pve", "/vms/500", ""},
		vecCheck{"privs", "User4@pve", "/vms/500", ""},
		vecCheck{"roles", "intern@pve", "/vms/600", ""},
		vecCheck{"roles", "intern@pve", "/vms/700", ""},
		vecCheck{"roles", "User4@pve", "/vms/700", ""},
		vecCheck{"privs", "intern@pve", "/vms/600", ""},
		vecCheck{"privs", "intern@pve", "/vms/700", "VM.Audit"},
		vecCheck{"privs", "User4@pve", "/vms/700", "VM.Console"},
		vecCheck{"roles", "intern@pve", "/pool/marketing/interns", "RoleINTERN"},
		vecCheck{"roles", "User4@pve", "/pool/marketing/interns", "RoleMARKETING"},
		vecCheck{"privs", "User1@pve", "/vms/600", "VM.Console"},
		vecCheck{"privs", "User2@pve", "/vms/600", "VM.Console"},
		vecCheck{"privs", "User3@pve", "/vms/600", ""},
		vecCheck{"privs", "User4@pve", "/vms/600", "VM.Console"},
		vecCheck{"privs", "User1@pve", "/storage/store1", "VM.Console,VM.PowerMgmt"},
		vecCheck{"privs", "User2@pve", "/storage/store1", "VM.PowerMgmt"},
		vecCheck{"privs", "User3@pve", "/storage/store1", "VM.PowerMgmt"},
		vecCheck{"privs", "User4@pve", "/storage/store1", "VM.Console"},
		vecCheck{"privs", "User1@pve", "/storage/store2", "VM.PowerMgmt"},
		vecCheck{"privs", "User2@pve", "/storage/store2", "VM.PowerMgmt"},
		vecCheck{"privs", "User3@pve", "/storage/store2", "VM.PowerMgmt"},
		vecCheck{"privs", "User4@pve", "/storage/store2", ""},
	)
}

func TestBuiltinRoleSizes(t *testing.T) {
	want := map[pveacl.Version]map[string]int{
		pveacl.PVE9: {"Administrator": 47, "NoAccess": 0, "PVEAdmin": 40, "PVEVMAdmin": 23, "PVEVMUser": 10, "PVEAuditor": 7,
			"PVEDatastoreAdmin": 4, "PVEDatastoreUser": 2, "PVEPoolAdmin": 2, "PVEPoolUser": 1, "PVETemplateUser": 2,
			"PVESDNAdmin": 3, "PVESDNUser": 2, "PVESysAdmin": 3, "PVEUserAdmin": 3, "PVEMappingAdmin": 3, "PVEMappingUser": 2},
		pveacl.PVE8: {"Administrator": 42, "NoAccess": 0, "PVEAdmin": 35, "PVEVMAdmin": 18, "PVEVMUser": 6, "PVEAuditor": 6,
			"PVEDatastoreAdmin": 4, "PVEDatastoreUser": 2, "PVEPoolAdmin": 2, "PVEPoolUser": 1, "PVETemplateUser": 2,
			"PVESDNAdmin": 3, "PVESDNUser": 2, "PVESysAdmin": 3, "PVEUserAdmin": 3, "PVEMappingAdmin": 3, "PVEMappingUser": 2},
	}
	for v, roles := range want {
		got := map[string]int{}
		for name, privs := range pveacl.BuiltinRoles(v) {
			got[name] = len(privs)
		}
		if diff := cmp.Diff(roles, got); diff != "" {
			t.Errorf("PVE %d built-in role sizes: -want +got:\n%s", v, diff)
		}
		if n := len(pveacl.Privileges(v)); n != roles["Administrator"] {
			t.Errorf("PVE %d has %d privileges, want %d", v, n, roles["Administrator"])
		}
	}
	if got := strings.Join(pveacl.BuiltinRoles(pveacl.PVE9)["PVEVMAdmin"], ","); got != pveVMAdmin9 {
		t.Errorf("PVE 9 PVEVMAdmin = %s", got)
	}
	if got := strings.Join(pveacl.BuiltinRoles(pveacl.PVE9)["Administrator"], ","); got != administrator9 {
		t.Errorf("PVE 9 Administrator = %s", got)
	}
	if !slicesContain(pveacl.BuiltinRoles(pveacl.PVE8)["PVEVMAdmin"], "VM.Monitor") || slicesContain(pveacl.BuiltinRoles(pveacl.PVE9)["PVEVMAdmin"], "VM.Monitor") {
		t.Error("VM.Monitor must be in PVE 8's PVEVMAdmin only")
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
