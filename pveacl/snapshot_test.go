package pveacl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSnapshotRoundTrip(t *testing.T) {
	for name, text := range map[string]string{"canonical": canonicalCfg, "tokens": vecTokens, "pools": vecPools} {
		cfg, _ := ParseUserCfg([]byte(text), PVE9)
		cfg.Resources = Resources{VMs: []int{100, 4000}, Storages: []string{"iso"}}
		b, err := json.Marshal(cfg.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		var snap Snapshot
		if err := json.Unmarshal(b, &snap); err != nil {
			t.Fatal(err)
		}
		back, err := BuildConfig(snap)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(cfg, back, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: Config -> Snapshot -> JSON -> BuildConfig: -want +got:\n%s", name, diff)
		}
	}
}

// API answers as PVE sends them: flags as numbers or strings, lists as
// comma-separated strings, special roles listed with the custom ones.
const apiAnswers = `{
 "version": 8,
 "users": [
  {"userid": "root@pam", "enable": 1, "expire": 0},
  {"userid": "alpha@pve", "enable": "1", "comment": "tenant", "groups": "ops",
   "tokens": [{"tokenid": "csi", "privsep": 1, "expire": 0}, {"tokenid": "ccm", "privsep": "0"}]}
 ],
 "groups": [{"groupid": "ops", "users": "alpha@pve,ghost@pve"}],
 "roles": [
  {"roleid": "PVEAuditor", "privs": "Datastore.Audit,Mapping.Audit", "special": 1},
  {"roleid": "CozyCCM", "privs": "VM.Audit,VM.Monitor", "special": 0}
 ],
 "acl": [
  {"path": "/pool/alpha", "type": "token", "ugid": "alpha@pve!csi", "roleid": "CozyCCM", "propagate": 0},
  {"path": "/", "type": "group", "ugid": "ops", "roleid": "PVEAuditor", "propagate": 1}
 ],
 "pools": [{"poolid": "alpha", "members": [{"type": "qemu", "vmid": 100}, {"type": "storage", "storage": "alpha-disks"}]}],
 "resources": [{"type": "qemu", "vmid": 100, "pool": "alpha"}, {"type": "lxc", "vmid": 300, "pool": "alpha"},
  {"type": "storage", "storage": "local"}, {"type": "node"}]
}`

func TestBuildConfigFromAPIAnswers(t *testing.T) {
	var snap Snapshot
	if err := json.Unmarshal([]byte(apiAnswers), &snap); err != nil {
		t.Fatal(err)
	}
	cfg, err := BuildConfig(snap)
	if err != nil {
		t.Fatal(err)
	}
	want := NewConfig(PVE8)
	want.Users["alpha@pve"] = User{Enable: true, Comment: "tenant", Tokens: map[string]Token{"csi": {Privsep: true}, "ccm": {}}}
	want.Groups["ops"] = Group{Members: []string{"alpha@pve", "ghost@pve"}}
	want.Roles["CozyCCM"] = Role{Privs: []string{"VM.Audit", "VM.Monitor"}}
	want.ACL[ACLKey{Path: "/pool/alpha", Kind: KindToken, Subject: "alpha@pve!csi", Role: "CozyCCM"}] = false
	want.ACL[ACLKey{Path: "/", Kind: KindGroup, Subject: "ops", Role: "PVEAuditor"}] = true
	want.Pools["alpha"] = Pool{VMs: []int{100, 300}, Storages: []string{"alpha-disks"}}
	want.Resources = Resources{VMs: []int{100, 300}, Storages: []string{"local"}}
	if diff := cmp.Diff(want, cfg, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	got := NewEvaluator(cfg).Permissions("alpha@pve!csi", "/vms/300").Map()
	if diff := cmp.Diff(map[string]int{"VM.Audit": 0}, got); diff != "" {
		t.Errorf("the token's pool role (VM.Audit, VM.Monitor) meets its user's group role (PVEAuditor on /, without VM.Monitor on PVE 8): %s", diff)
	}
}

func TestBuildConfigRefusesMisreadState(t *testing.T) {
	snap := Snapshot{Version: PVE9,
		Users: []SnapshotUser{{UserID: "nobody"}, {UserID: "a@pve", Tokens: []SnapshotToken{{TokenID: "x"}}}},
		Roles: []SnapshotRole{{RoleID: "Old", Privs: List{"VM.Monitor"}}},
		ACL:   []SnapshotACE{{Path: "/a b", Type: "user", UGID: "a@pve", RoleID: "R"}, {Path: "/", Type: "robot", UGID: "a@pve", RoleID: "R"}},
	}
	_, err := BuildConfig(snap)
	if !errors.Is(err, ErrInvalidSnapshot) {
		t.Fatalf("error %v does not wrap ErrInvalidSnapshot", err)
	}
	for _, want := range []string{`user "nobody" is not a valid user id`, `token "x" of user a@pve`, "role Old: invalid privilege 'VM.Monitor' for PVE 9",
		"invalid ACL path '/a b'", `type "robot" is not user, group or token`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := BuildConfig(Snapshot{Version: 7}); !errors.Is(err, ErrInvalidVersion) {
		t.Errorf("version 7: %v", err)
	}
}

func TestFlagAndListDecoding(t *testing.T) {
	var v struct {
		A, B, C, D Flag
		L, M       List
	}
	if err := json.Unmarshal([]byte(`{"A":1,"B":"0","C":true,"D":"1","L":"a, b;c","M":["x","y"]}`), &v); err != nil {
		t.Fatal(err)
	}
	if !bool(v.A) || bool(v.B) || !bool(v.C) || !bool(v.D) || !cmp.Equal(v.L, List{"a", "b", "c"}) || !cmp.Equal(v.M, List{"x", "y"}) {
		t.Errorf("decoded %+v", v)
	}
	if err := json.Unmarshal([]byte(`{"A":"yes"}`), &v); err == nil || !strings.Contains(err.Error(), "use 0, 1, true or false") {
		t.Errorf("a non-boolean must be refused clearly, got %v", err)
	}
}
