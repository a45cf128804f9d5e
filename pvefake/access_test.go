package pvefake_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// entries returns the ACL entries of one path.
func entries(srv *pvefake.Server, path string) map[pveacl.ACLKey]bool {
	out := map[pveacl.ACLKey]bool{}
	for k, v := range srv.AccessConfig().ACL {
		if k.Path == path {
			out[k] = v
		}
	}
	return out
}

func TestACLDelegation(t *testing.T) {
	target := func(role string) pveacl.ACLKey {
		return pveacl.ACLKey{Path: "/vms/100", Kind: pveacl.KindUser, Subject: "target@pve", Role: role}
	}
	type args struct {
		grants map[string][]string // the caller's roles (propagated unless the path ends in "!")
		noProp bool
		req    proxmox.ACLOptions
	}
	type want struct {
		err     string
		entries map[pveacl.ACLKey]bool
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"PermissionsModify": {
			reason: "Permissions.Modify hands out any role, NoAccess included",
			args:   args{grants: map[string][]string{"/": {"Administrator"}}, req: proxmox.ACLOptions{Path: "/vms/100", Roles: "NoAccess", Users: "target@pve", Propagate: true}},
			want:   want{entries: map[pveacl.ACLKey]bool{target("NoAccess"): true}},
		},
		"Subset": {
			reason: "VM.Allocate substitutes for Permissions.Modify on /vms/* for roles within the caller's privileges",
			args:   args{grants: map[string][]string{"/vms/100": {"PVEVMAdmin"}}, req: proxmox.ACLOptions{Path: "/vms/100", Roles: "PVEVMUser", Users: "target@pve", Propagate: true}},
			want:   want{entries: map[pveacl.ACLKey]bool{target("PVEVMUser"): true}},
		},
		"Superset": {
			reason: "a role beyond the caller's privileges is refused and nothing is written",
			args:   args{grants: map[string][]string{"/vms/100": {"PVEVMAdmin"}}, req: proxmox.ACLOptions{Path: "/vms/100", Roles: "PVEVMUser,PVEAdmin", Users: "target@pve", Propagate: true}},
			want:   want{err: "ACL update failed: 400 Parameter verification failed.\nrole: Cannot add role 'PVEAdmin' - requires 'Permissions.Modify' or superset of privileges.", entries: map[pveacl.ACLKey]bool{}},
		},
		"Propagation": {
			reason: "a propagated grant needs the caller's privileges to propagate",
			args:   args{grants: map[string][]string{"/vms/100": {"PVEVMAdmin"}}, noProp: true, req: proxmox.ACLOptions{Path: "/vms/100", Roles: "PVEVMUser", Users: "target@pve", Propagate: true}},
			want:   want{err: "role: Cannot add role 'PVEVMUser' with propagation - requires 'Permissions.Modify' or propagated superset of privileges.", entries: map[pveacl.ACLKey]bool{}},
		},
		"NoPropagation": {
			reason: "the same grant without propagation is allowed",
			args:   args{grants: map[string][]string{"/vms/100": {"PVEVMAdmin"}}, noProp: true, req: proxmox.ACLOptions{Path: "/vms/100", Roles: "PVEVMUser", Users: "target@pve"}},
			want:   want{entries: map[pveacl.ACLKey]bool{target("PVEVMUser"): false}},
		},
		"NoAccess": {
			reason: "NoAccess always needs Permissions.Modify",
			args:   args{grants: map[string][]string{"/vms/100": {"PVEVMAdmin"}}, req: proxmox.ACLOptions{Path: "/vms/100", Roles: "NoAccess", Users: "target@pve", Propagate: true}},
			want:   want{err: "role: Cannot add role 'NoAccess' - requires 'Permissions.Modify'", entries: map[pveacl.ACLKey]bool{}},
		},
		"NoDelegation": {
			reason: "without Permissions.Modify or VM.Allocate the path check fails first",
			args:   args{grants: map[string][]string{"/vms/100": {"PVEVMUser"}}, req: proxmox.ACLOptions{Path: "/vms/100", Roles: "PVEVMUser", Users: "target@pve", Propagate: true}},
			want:   want{err: "Permission check failed (/vms/100, Permissions.Modify|VM.Allocate)", entries: map[pveacl.ACLKey]bool{}},
		},
		"UnknownRole": {
			reason: "a role must exist",
			args:   args{grants: map[string][]string{"/": {"Administrator"}}, req: proxmox.ACLOptions{Path: "/vms/100", Roles: "Nope", Users: "target@pve", Propagate: true}},
			want:   want{err: "ACL update failed: role 'Nope' does not exist", entries: map[pveacl.ACLKey]bool{}},
		},
		"UnknownToken": {
			reason: "a token must exist",
			args:   args{grants: map[string][]string{"/": {"Administrator"}}, req: proxmox.ACLOptions{Path: "/vms/100", Roles: "PVEAuditor", Tokens: "target@pve!nope", Propagate: true}},
			want:   want{err: "ACL update failed: no such token 'nope' for user 'target@pve'", entries: map[pveacl.ACLKey]bool{}},
		},
		"InvalidPath": {
			reason: "check_path refuses unknown paths when adding",
			args:   args{grants: map[string][]string{"/": {"Administrator"}}, req: proxmox.ACLOptions{Path: "/vms/abc", Roles: "PVEAuditor", Users: "target@pve", Propagate: true}},
			want:   want{err: "path: invalid ACL path '/vms/abc'", entries: map[pveacl.ACLKey]bool{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv, _ := start(t)
			must(t, srv.AddUser("target@pve", pvefake.UserSpec{}))
			must(t, srv.AddUser("caller@pve", pvefake.UserSpec{}))
			secret, err := srv.AddToken("caller@pve", "tk", pvefake.TokenSpec{Privsep: true})
			must(t, err)
			for path, roles := range tc.args.grants {
				must(t, srv.SetACL(path, pveacl.KindUser, "caller@pve", !tc.args.noProp, roles...))
				must(t, srv.SetACL(path, pveacl.KindToken, "caller@pve!tk", !tc.args.noProp, roles...))
			}
			c := client(srv, "caller@pve!tk", secret)
			err = c.UpdateACL(ctx, tc.args.req)
			wantMessage(t, tc.reason, err, tc.want.err)
			got := entries(srv, "/vms/100")
			for k := range got {
				if k.Subject != "target@pve" && k.Subject != "target@pve!nope" {
					delete(got, k)
				}
			}
			if diff := cmp.Diff(tc.want.entries, got); diff != "" {
				t.Errorf("%s: entries on /vms/100: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestACLRemoval(t *testing.T) {
	srv, _ := start(t)
	must(t, srv.AddUser("target@pve", pvefake.UserSpec{}))
	must(t, srv.SetACL("/vms/100", pveacl.KindUser, "target@pve", true, "PVEVMUser"))
	c := grantee(t, srv, "caller@pve", map[string][]string{"/vms/100": {"PVEVMAdmin"}})
	err := c.UpdateACL(ctx, proxmox.ACLOptions{Path: "/vms/100", Roles: "PVEVMUser", Users: "target@pve", Delete: true})
	wantMessage(t, "removing a role within the caller's privileges is allowed", err, "")
	if _, ok := entries(srv, "/vms/100")[pveacl.ACLKey{Path: "/vms/100", Kind: pveacl.KindUser, Subject: "target@pve", Role: "PVEVMUser"}]; ok {
		t.Error("the entry must be gone")
	}
}

func TestTokens(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddUser("k8s@pve", pvefake.UserSpec{}))
	var created proxmox.NewAPIToken
	must(t, root.Post(ctx, "/access/users/k8s@pve/token/csi", map[string]any{"comment": "csi"}, &created))
	if created.FullTokenID != "k8s@pve!csi" || len(created.Value) != 36 {
		t.Fatalf("creation returns the full id and a UUID secret, got %q and a %d-byte value", created.FullTokenID, len(created.Value))
	}
	var info map[string]any
	must(t, root.Get(ctx, "/access/users/k8s@pve/token/csi", &info))
	if diff := cmp.Diff(map[string]any{"privsep": float64(1), "expire": float64(0), "comment": "csi"}, info); diff != "" {
		t.Errorf("the token reads back without its secret, privsep defaulting to 1: -want +got:\n%s", diff)
	}
	err := root.Post(ctx, "/access/users/k8s@pve/token/csi", nil, nil)
	wantMessage(t, "a second creation fails", err, "tokenid: Token already exists.")
	tok := client(srv, "k8s@pve!csi", created.Value)
	if _, err := tok.Version(ctx); err != nil {
		t.Errorf("the returned secret authenticates: %v", err)
	}
	var regen map[string]any
	must(t, root.Put(ctx, "/access/users/k8s@pve/token/csi", map[string]any{"regenerate": 1}, &regen))
	if v, _ := regen["value"].(string); v == "" || v == created.Value {
		t.Errorf("regenerate returns a new secret, got %v", regen)
	}
	if _, err := tok.Version(ctx); err == nil {
		t.Error("the old secret must stop working after regenerate")
	}
	must(t, srv.SetACL("/pool/x", pveacl.KindToken, "k8s@pve!csi", false, "PVEAuditor"))
	must(t, root.Delete(ctx, "/access/users/k8s@pve/token/csi", nil))
	if got := entries(srv, "/pool/x"); len(got) != 0 {
		t.Errorf("a deleted token's ACL entries go with it, left %v", got)
	}
	srv8, root8 := start(t, pvefake.WithVersion(pveacl.PVE8))
	must(t, srv8.AddUser("k8s@pve", pvefake.UserSpec{}))
	must(t, root8.Post(ctx, "/access/users/k8s@pve/token/csi", nil, nil))
	err = root8.Put(ctx, "/access/users/k8s@pve/token/csi", map[string]any{"regenerate": 1}, nil)
	wantMessage(t, "PVE 8 has no regenerate", err, "regenerate: property is not defined in schema")
}

func TestUserListing(t *testing.T) {
	srv, root := start(t)
	must(t, srv.AddGroup("ops"))
	must(t, srv.AddUser("a@pve", pvefake.UserSpec{Groups: []string{"ops"}, Comment: "alice"}))
	must(t, srv.AddUser("b@pve", pvefake.UserSpec{}))
	_, err := srv.AddToken("a@pve", "tk", pvefake.TokenSpec{Privsep: true})
	must(t, err)
	var all []map[string]any
	must(t, root.Get(ctx, "/access/users?full=1", &all))
	if len(all) != 3 || all[0]["userid"] != "a@pve" || all[0]["groups"] != "ops" || len(all[0]["tokens"].([]any)) != 1 {
		t.Errorf("root lists every user with groups and tokens, got %v", all)
	}
	groupAdmin := grantee(t, srv, "lead@pve", map[string][]string{"/access/groups/ops": {"PVEUserAdmin"}})
	var some []map[string]any
	must(t, groupAdmin.Get(ctx, "/access/users", &some))
	if len(some) != 1 || some[0]["userid"] != "a@pve" {
		t.Errorf("User.Modify on a group lists its members only (a token is not its own user), got %v", some)
	}
}

func TestPermissionsEndpoint(t *testing.T) {
	srv, _ := start(t)
	c := grantee(t, srv, "u@pve", map[string][]string{"/vms": {"PVEVMUser"}})
	var own proxmox.Permissions
	must(t, c.Get(ctx, "/access/permissions?path=/vms/100/", &own))
	if _, ok := own["/vms/100/"]; !ok || !bool(own["/vms/100/"]["VM.Audit"]) {
		t.Errorf("a token reads its own permissions, keyed by the path as given: %v", own)
	}
	err := c.Get(ctx, "/access/permissions?userid=u@pve", &own)
	wantMessage(t, "a token cannot read its owner's permissions", err, "Permission check failed (/access, Sys.Audit)")
}

func TestRoles(t *testing.T) {
	_, root := start(t)
	cases := map[string]struct {
		reason string
		do     func() error
		err    string
	}{
		"Prefix":  {reason: "the PVE prefix is reserved", do: func() error { return root.NewRole(ctx, "pveX", "VM.Audit") }, err: "roleid: cannot use role ID starting with the (case-insensitive) 'PVE' namespace"},
		"BadPriv": {reason: "unknown privileges are refused", do: func() error { return root.NewRole(ctx, "R1", "VM.Audit,Bogus") }, err: "create role failed: invalid privilege 'Bogus'"},
		"Special": {reason: "built-in roles cannot change", do: func() error { return root.Put(ctx, "/access/roles/PVEAdmin", map[string]any{"privs": "VM.Audit"}, nil) }, err: "auto-generated role 'PVEAdmin' cannot be modified"},
		"Create":  {reason: "a custom role", do: func() error { return root.NewRole(ctx, "R2", "VM.Audit") }},
		"Append": {reason: "append adds", do: func() error {
			return root.Put(ctx, "/access/roles/R2", map[string]any{"privs": "VM.Console", "append": 1}, nil)
		}},
		"Duplicate":  {reason: "names are unique", do: func() error { return root.NewRole(ctx, "Administrator", "") }, err: "create role failed: role 'Administrator' already exists"},
		"NotPresent": {reason: "update needs the role", do: func() error { return root.Put(ctx, "/access/roles/R9", map[string]any{"privs": "VM.Audit"}, nil) }, err: "update role failed: role 'R9' does not exist"},
	}
	for _, name := range []string{"Prefix", "BadPriv", "Special", "Create", "Append", "Duplicate", "NotPresent"} {
		tc := cases[name]
		t.Run(name, func(t *testing.T) { wantMessage(t, tc.reason, tc.do(), tc.err) })
	}
	role, err := root.Role(ctx, "R2")
	must(t, err)
	if diff := cmp.Diff(proxmox.Permission{"VM.Audit": true, "VM.Console": true}, role); diff != "" {
		t.Errorf("R2 after create and append: -want +got:\n%s", diff)
	}
	_, root8 := start(t, pvefake.WithVersion(pveacl.PVE8))
	wantMessage(t, "PVE 8 has no guest-agent privileges", root8.NewRole(ctx, "CCM", "VM.Audit,VM.GuestAgent.Audit"), "invalid privilege 'VM.GuestAgent.Audit'")
	wantMessage(t, "PVE 8 has VM.Monitor", root8.NewRole(ctx, "CCM", "VM.Audit,VM.Monitor"), "")
}
