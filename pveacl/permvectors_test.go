package pveacl_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/permvec"
)

// The permission vectors (pveacl/permvec: pve-access-control's
// perm-test1..8 restated, and cases of our own for tokens and pools) are
// the oracle the evaluator answers to: "roles" checks
// PVE::AccessControl::roles, "privs", "allow" and "deny"
// RPCEnvironment::permissions.

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

func TestPermissionVectors(t *testing.T) {
	permvec.Run(t, func(_ *testing.T, cfg *pveacl.Config) permvec.Evaluator {
		return evaluator{pveacl.NewEvaluator(cfg)}
	})
}

// vectorConfig returns the user.cfg of the vector case name.
func vectorConfig(t *testing.T, name string) string {
	t.Helper()
	cases, err := permvec.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Name == name {
			return c.Config
		}
	}
	t.Fatalf("no permission vector case %s", name)
	return ""
}

// evaluator is pveacl.Evaluator in the vectors' terms: roles and privileges as names.
type evaluator struct{ ev *pveacl.Evaluator }

func (e evaluator) Privileges(authID, path string) ([]string, error) {
	return e.ev.Permissions(authID, path).Names(), nil
}

func (e evaluator) Roles(authID, path string) ([]string, error) {
	return slices.Sorted(maps.Keys(e.ev.Roles(authID, path))), nil
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
