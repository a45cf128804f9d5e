package liveacl

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
)

// roundTripGroups has tokens of both kinds, groups, pools sharing a
// storage and entries of every subject kind with both propagate flags.
const roundTripGroups = `user:a@pve:1:
user:b@pam:1:
token:a@pve!t1::1:
token:b@pam!t2::0:
group:g1:a@pve,b@pam:
group:g2:b@pam:
pool:p::100,101:s1:
pool:q:::s1:
acl:1:/vms:@g1:PVEVMUser:
acl:0:/vms/101:a@pve!t1:NoAccess:
acl:1:/storage:@g2:PVEDatastoreUser:
acl:0:/pool/q:b@pam!t2:PVEPoolUser:
`

func TestSnapshotRoundTrip(t *testing.T) {
	canonical, err := os.ReadFile("../usercfg/testdata/canonical.cfg")
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"canonical": string(canonical), "groups": roundTripGroups} {
		cfg, _ := usercfg.Parse([]byte(text), pveacl.PVE9)
		cfg.Resources = pveacl.Resources{VMs: []int{100, 4000}, Storages: []string{"iso"}}
		b, err := json.Marshal(snapshotOf(cfg))
		if err != nil {
			t.Fatal(err)
		}
		var snap snapshot
		if err := json.Unmarshal(b, &snap); err != nil {
			t.Fatal(err)
		}
		back, err := buildConfig(snap)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(cfg, back, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: Config -> snapshot -> JSON -> buildConfig: -want +got:\n%s", name, diff)
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
	var snap snapshot
	if err := json.Unmarshal([]byte(apiAnswers), &snap); err != nil {
		t.Fatal(err)
	}
	cfg, err := buildConfig(snap)
	if err != nil {
		t.Fatal(err)
	}
	want := pveacl.NewConfig(pveacl.PVE8)
	want.Users["alpha@pve"] = pveacl.User{Enable: true, Comment: "tenant", Tokens: map[string]pveacl.Token{"csi": {Privsep: true}, "ccm": {}}}
	want.Groups["ops"] = pveacl.Group{Members: []string{"alpha@pve", "ghost@pve"}}
	want.Roles["CozyCCM"] = pveacl.Role{Privs: []string{"VM.Audit", "VM.Monitor"}}
	want.ACL[pveacl.ACLKey{Path: "/pool/alpha", Kind: pveacl.KindToken, Subject: "alpha@pve!csi", Role: "CozyCCM"}] = false
	want.ACL[pveacl.ACLKey{Path: "/", Kind: pveacl.KindGroup, Subject: "ops", Role: "PVEAuditor"}] = true
	want.Pools["alpha"] = pveacl.Pool{VMs: []int{100, 300}, Storages: []string{"alpha-disks"}}
	want.Resources = pveacl.Resources{VMs: []int{100, 300}, Storages: []string{"local"}}
	if diff := cmp.Diff(want, cfg, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	got := pveacl.NewEvaluator(cfg).Permissions("alpha@pve!csi", "/vms/300").Map()
	if diff := cmp.Diff(map[string]int{"VM.Audit": 0}, got); diff != "" {
		t.Errorf("the token's pool role (VM.Audit, VM.Monitor) meets its user's group role (PVEAuditor on /, without VM.Monitor on PVE 8): %s", diff)
	}
}

func TestBuildConfigRefusesMisreadState(t *testing.T) {
	snap := snapshot{Version: pveacl.PVE9,
		Users: []snapshotUser{{UserID: "nobody"}, {UserID: "a@pve", Tokens: []snapshotToken{{TokenID: "x"}}}},
		Roles: []snapshotRole{{RoleID: "Old", Privs: pveList{"VM.Monitor"}}},
		ACL:   []snapshotACE{{Path: "/a b", Type: "user", UGID: "a@pve", RoleID: "R"}, {Path: "/", Type: "robot", UGID: "a@pve", RoleID: "R"}},
	}
	_, err := buildConfig(snap)
	if !errors.Is(err, errInvalidSnapshot) {
		t.Fatalf("error %v does not wrap errInvalidSnapshot", err)
	}
	for _, want := range []string{`user "nobody" is not a valid user id`, `token "x" of user a@pve`, "role Old: invalid privilege 'VM.Monitor' for PVE 9",
		"invalid ACL path '/a b'", `type "robot" is not user, group or token`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := buildConfig(snapshot{Version: 7}); !errors.Is(err, pveacl.ErrInvalidVersion) {
		t.Errorf("version 7: %v", err)
	}
}

func TestFlagAndListDecoding(t *testing.T) {
	var v struct {
		A, B, C, D pveFlag
		L, M       pveList
	}
	if err := json.Unmarshal([]byte(`{"A":1,"B":"0","C":true,"D":"1","L":"a, b;c","M":["x","y"]}`), &v); err != nil {
		t.Fatal(err)
	}
	if !bool(v.A) || bool(v.B) || !bool(v.C) || !bool(v.D) || !cmp.Equal(v.L, pveList{"a", "b", "c"}) || !cmp.Equal(v.M, pveList{"x", "y"}) {
		t.Errorf("decoded %+v", v)
	}
	if err := json.Unmarshal([]byte(`{"A":"yes"}`), &v); err == nil || !strings.Contains(err.Error(), "use 0, 1, true or false") {
		t.Errorf("a non-boolean must be refused clearly, got %v", err)
	}
}
