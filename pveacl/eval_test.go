package pveacl_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
)

// Semantics of facts §1.3-1.6 beyond the upstream vectors.
func TestPermissionSemantics(t *testing.T) {
	base := `user:u@pve:1:
token:u@pve!sep::1:
token:u@pve!full::0:
user:root@pam:1:
token:root@pam!sep::1:
token:root@pam!full::0:
group:g:u@pve:
group:h:u@pve:
role:A:VM.Audit,VM.Console:
role:B:VM.PowerMgmt:
role:S:Datastore.Audit:
`
	cases := map[string]struct {
		reason string
		acl    string
		authID string
		path   string
		want   map[string]int
	}{
		"UserNonQualifyingLetsGroupIn": {
			reason: "a user entry with propagate=0 on /vms does not block a propagating group entry there from reaching /vms/100",
			acl:    "acl:0:/vms:u@pve:B:\nacl:1:/vms:@g:A:\n",
			authID: "u@pve", path: "/vms/100",
			want: map[string]int{"VM.Audit": 1, "VM.Console": 1},
		},
		"DeeperGroupBeatsShallowerUser": {
			reason: "a group entry deeper down replaces the user's entry above",
			acl:    "acl:1:/:u@pve:A:\nacl:1:/vms:@g:B:\n",
			authID: "u@pve", path: "/vms/200",
			want: map[string]int{"VM.PowerMgmt": 1},
		},
		"NoPropagateIsLocal": {
			reason: "propagate=0 grants on its own path only, with flag 0",
			acl:    "acl:0:/vms:u@pve:A:\n",
			authID: "u@pve", path: "/vms",
			want: map[string]int{"VM.Audit": 0, "VM.Console": 0},
		},
		"FlagIsORofRoles": {
			reason: "a privilege's flag is 1 when any role holding it propagates",
			acl:    "acl:0:/vms:@g:A:\nacl:1:/vms:@h:A,B:\n",
			authID: "u@pve", path: "/vms",
			want: map[string]int{"VM.Audit": 1, "VM.Console": 1, "VM.PowerMgmt": 1},
		},
		"PoolRolesAddWithFlagZero": {
			reason: "pool roles are added to a more specific ACL (union) and never propagate",
			acl:    "acl:1:/vms/100:u@pve:B:\nacl:1:/pool/p:u@pve:A:\n",
			authID: "u@pve", path: "/vms/100",
			want: map[string]int{"VM.Audit": 0, "VM.Console": 0, "VM.PowerMgmt": 1},
		},
		"PoolRolesOnStorageIgnorePathType": {
			reason: "a pool's VM roles apply to its storages too",
			acl:    "acl:1:/pool/p:u@pve:A:\n",
			authID: "u@pve", path: "/storage/st",
			want: map[string]int{"VM.Audit": 0, "VM.Console": 0},
		},
		"PoolPathNotNormalised": {
			reason: "pool roles attach to the exact path /vms/<id>, not to an unnormalised spelling",
			acl:    "acl:1:/pool/p:u@pve:A:\n",
			authID: "u@pve", path: "/vms/100/",
			want: map[string]int{},
		},
		"PrivsepIntersectsFlagsAND": {
			reason: "a privsep token keeps what both sides hold; the flag is the AND",
			acl:    "acl:0:/vms:u@pve:A:\nacl:1:/vms:u@pve!sep:A,B:\n",
			authID: "u@pve!sep", path: "/vms",
			want: map[string]int{"VM.Audit": 0, "VM.Console": 0},
		},
		"PrivsepZeroIsTheUser": {
			reason: "a privsep=0 token is its user, its own entries ignored",
			acl:    "acl:1:/vms:u@pve:B:\nacl:1:/vms:u@pve!full:A:\n",
			authID: "u@pve!full", path: "/vms/7",
			want: map[string]int{"VM.PowerMgmt": 1},
		},
		"TokensAreInNoGroup": {
			reason: "group entries never reach a token's own side",
			acl:    "acl:1:/:@g:A:\n",
			authID: "u@pve!sep", path: "/vms",
			want: map[string]int{},
		},
		"RootTokenSeparated": {
			reason: "a privsep root@pam token holds its own entries only",
			acl:    "acl:1:/vms:root@pam!sep:B:\n",
			authID: "root@pam!sep", path: "/vms/100",
			want: map[string]int{"VM.PowerMgmt": 1},
		},
		"MissingToken": {
			reason: "an unknown token holds nothing",
			acl:    "acl:1:/:@g:A:\n",
			authID: "u@pve!nope", path: "/",
			want: map[string]int{},
		},
		"StorageInNoAccessPool": {
			reason: "a pool NoAccess on one of a storage's pools wipes the others",
			acl:    "acl:1:/pool/p:u@pve:A:\nacl:1:/pool/q:u@pve:NoAccess:\nacl:1:/storage:u@pve:S:\n",
			authID: "u@pve", path: "/storage/st",
			want: map[string]int{},
		},
		"RelativePathSkipsRoot": {
			reason: "a path without a leading slash starts below the root, so root entries do not count",
			acl:    "acl:1:/:u@pve:A:\n",
			authID: "u@pve", path: "vms/100",
			want: map[string]int{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, rep := usercfg.Parse([]byte(base+tc.acl+"pool:p::100:st:\npool:q:::st:\n"), pveacl.PVE9)
			if rep.Total() > 0 {
				t.Fatalf("fixture warnings: %v", rep.Warnings)
			}
			got := pveacl.NewEvaluator(cfg).Permissions(tc.authID, tc.path).Map()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nPermissions(%s, %s): -want +got:\n%s", tc.reason, tc.authID, tc.path, diff)
			}
		})
	}
}

func TestRootHoldsEverything(t *testing.T) {
	for _, v := range []pveacl.Version{pveacl.PVE8, pveacl.PVE9} {
		cfg := pveacl.NewConfig(v)
		cfg.Users["root@pam"] = pveacl.User{Enable: true, Tokens: map[string]pveacl.Token{"full": {}}}
		ev := pveacl.NewEvaluator(cfg)
		for _, id := range []string{"root@pam", "root@pam!full"} {
			got := ev.Permissions(id, "/anything")
			if len(got.Names()) != len(pveacl.Privileges(v)) || !got.Propagates("Permissions.Modify") {
				t.Errorf("PVE %d: %s holds %d privileges, want all %d with propagate=1", v, id, len(got.Names()), len(pveacl.Privileges(v)))
			}
		}
		if diff := cmp.Diff(map[string]bool{"Administrator": true}, ev.Roles("root@pam", "/")); diff != "" {
			t.Errorf("root@pam roles: %s", diff)
		}
	}
}

func TestEffectivePermissions(t *testing.T) {
	cfg, _ := usercfg.Parse([]byte(vectorConfig(t, "perm-test8")), pveacl.PVE9)
	got := map[string]map[string]int{}
	for p, s := range pveacl.NewEvaluator(cfg).EffectivePermissions("ben@pve") {
		got[p] = s.Map()
	}
	admin := map[string]int{}
	for _, p := range pveacl.Privileges(pveacl.PVE9) {
		admin[p] = 1
	}
	want := map[string]map[string]int{
		"/vms":      {"VM.Allocate": 1, "VM.Audit": 1, "VM.Console": 1},
		"/vms/2100": {"VM.Audit": 1, "VM.PowerMgmt": 1},
		"/vms/2200": {"Datastore.AllocateSpace": 1, "Datastore.Audit": 1},
		"/vms/2300": {"VM.Allocate": 1, "VM.Audit": 1, "VM.Console": 1, "VM.PowerMgmt": 0},
		"/users":    admin,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the fixed paths, every ACL tree path and every pool member, empty ones left out: -want +got:\n%s", diff)
	}
}
