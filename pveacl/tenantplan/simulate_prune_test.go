package tenantplan

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

func pruneFixture() *pveacl.Config {
	c := pveacl.NewConfig(pveacl.PVE9)
	c.Users["old@pve"] = pveacl.User{Enable: true, Comment: ownerMark + "tenant old", Tokens: map[string]pveacl.Token{"csi": {Privsep: true}, "ccm": {Privsep: true}}}
	c.Users["keep@pve"] = pveacl.User{Enable: true, Tokens: map[string]pveacl.Token{}}
	c.Groups["ops"] = pveacl.Group{Members: []string{"keep@pve", "old@pve"}}
	c.Pools["old"] = pveacl.Pool{Comment: ownerMark + "tenant old", VMs: []int{100}, Storages: []string{"old-lvm"}}
	c.ACL[pveacl.ACLKey{Path: "/pool/old", Kind: pveacl.KindToken, Subject: "old@pve!csi", Role: "PVEAuditor"}] = true
	c.ACL[pveacl.ACLKey{Path: "/pool/old", Kind: pveacl.KindUser, Subject: "old@pve", Role: "PVEAuditor"}] = true
	c.ACL[pveacl.ACLKey{Path: "/vms", Kind: pveacl.KindUser, Subject: "keep@pve", Role: "PVEAuditor"}] = true
	return c
}

func TestApplyPrune(t *testing.T) {
	changes := []Change{
		{Op: OpDeleteToken, User: "old@pve", Token: "csi"},
		{Op: OpDeleteUser, User: "old@pve"},
		{Op: OpRemovePoolMembers, Pool: "old", VMs: []int{100}, Storages: []string{"old-lvm"}},
		{Op: OpDeletePool, Pool: "old"},
	}
	got, err := Simulate(pruneFixture(), changes)
	if err != nil {
		t.Fatalf("Simulate: %v", err)
	}
	want := pruneFixture()
	delete(want.Users, "old@pve")
	delete(want.Pools, "old")
	want.Groups["ops"] = pveacl.Group{Members: []string{"keep@pve"}}
	want.ACL = map[pveacl.ACLKey]bool{{Path: "/vms", Kind: pveacl.KindUser, Subject: "keep@pve", Role: "PVEAuditor"}: true}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("a full prune leaves only what it does not own: -want +got:\n%s", diff)
	}
	again, err := Simulate(got, changes[:2])
	if err != nil || !cmp.Equal(got, again, cmpopts.EquateEmpty()) {
		t.Errorf("deleting what is gone must change nothing: err %v, diff %s", err, cmp.Diff(got, again))
	}
}

func TestApplyPruneRefusesNonEmptyPool(t *testing.T) {
	_, err := Simulate(pruneFixture(), []Change{{Op: OpDeletePool, Pool: "old"}})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("want a refusal, got %v", err)
	}
	var r *refusedError
	if !errors.As(err, &r) || r.Msg != "pool 'old' is not empty (contains VM 100)" {
		t.Errorf("want PVE's message, got %v", err)
	}
}

func TestPveumPruneCommands(t *testing.T) {
	cases := map[string]struct {
		reason string
		change Change
		want   string
	}{
		"DeleteToken": {"a token is removed with user token remove", Change{Op: OpDeleteToken, User: "old@pve", Token: "csi"}, "pveum user token remove old@pve csi"},
		"DeleteUser":  {"a user is deleted", Change{Op: OpDeleteUser, User: "old@pve"}, "pveum user delete old@pve"},
		"RemoveMembers": {"members are detached with --delete 1", Change{Op: OpRemovePoolMembers, Pool: "old", VMs: []int{100, 101}, Storages: []string{"old-lvm"}},
			"pveum pool modify old --vms 100,101 --storage old-lvm --delete 1"},
		"DeletePool": {"an empty pool is deleted", Change{Op: OpDeletePool, Pool: "old"}, "pveum pool delete old"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := PveumCommand(tc.change); got != tc.want {
				t.Errorf("%s: got %q, want %q", tc.reason, got, tc.want)
			}
		})
	}
}
