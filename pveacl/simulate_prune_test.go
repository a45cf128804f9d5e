package pveacl

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func pruneFixture() *Config {
	c := NewConfig(PVE9)
	c.Users["old@pve"] = User{Enable: true, Comment: OwnerMark + "tenant old", Tokens: map[string]Token{"csi": {Privsep: true}, "ccm": {Privsep: true}}}
	c.Users["keep@pve"] = User{Enable: true, Tokens: map[string]Token{}}
	c.Groups["ops"] = Group{Members: []string{"keep@pve", "old@pve"}}
	c.Pools["old"] = Pool{Comment: OwnerMark + "tenant old", VMs: []int{100}, Storages: []string{"old-lvm"}}
	c.ACL[ACLKey{Path: "/pool/old", Kind: KindToken, Subject: "old@pve!csi", Role: "PVEAuditor"}] = true
	c.ACL[ACLKey{Path: "/pool/old", Kind: KindUser, Subject: "old@pve", Role: "PVEAuditor"}] = true
	c.ACL[ACLKey{Path: "/vms", Kind: KindUser, Subject: "keep@pve", Role: "PVEAuditor"}] = true
	return c
}

func TestApplyPrune(t *testing.T) {
	changes := []Change{
		{Op: OpDeleteToken, User: "old@pve", Token: "csi"},
		{Op: OpDeleteUser, User: "old@pve"},
		{Op: OpRemovePoolMembers, Pool: "old", VMs: []int{100}, Storages: []string{"old-lvm"}},
		{Op: OpDeletePool, Pool: "old"},
	}
	got, err := Apply(pruneFixture(), changes)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := pruneFixture()
	delete(want.Users, "old@pve")
	delete(want.Pools, "old")
	want.Groups["ops"] = Group{Members: []string{"keep@pve"}}
	want.ACL = map[ACLKey]bool{{Path: "/vms", Kind: KindUser, Subject: "keep@pve", Role: "PVEAuditor"}: true}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("a full prune leaves only what it does not own: -want +got:\n%s", diff)
	}
	again, err := Apply(got, changes[:2])
	if err != nil || !cmp.Equal(got, again, cmpopts.EquateEmpty()) {
		t.Errorf("deleting what is gone must change nothing: err %v, diff %s", err, cmp.Diff(got, again))
	}
}

func TestApplyPruneRefusesNonEmptyPool(t *testing.T) {
	_, err := Apply(pruneFixture(), []Change{{Op: OpDeletePool, Pool: "old"}})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("want a refusal, got %v", err)
	}
	var r *RefusedError
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
