package tenantplan

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/usercfg"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func exampleSpec(t testing.TB) *Tenants {
	t.Helper()
	spec, err := LoadTenants(mustRead(t, "testdata/tenants.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestPlanGolden(t *testing.T) {
	for _, v := range []pveacl.Version{pveacl.PVE8, pveacl.PVE9} {
		changes, err := Plan(exampleSpec(t), pveacl.NewConfig(v), WithVersion(v))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := RenderPveum(&b, changes, v); err != nil {
			t.Fatal(err)
		}
		golden := "testdata/plan-pve" + string(rune('0'+v)) + ".sh"
		if *update {
			if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(string(mustRead(t, golden)), b.String()); diff != "" {
			t.Errorf("PVE %d plan differs from %s (go test -update rewrites it): -want +got:\n%s", v, golden, diff)
		}
	}
}

func TestPlanOrderAndVersion(t *testing.T) {
	for _, v := range []pveacl.Version{pveacl.PVE8, pveacl.PVE9} {
		changes, err := Plan(exampleSpec(t), pveacl.NewConfig(v), WithVersion(v))
		if err != nil {
			t.Fatal(err)
		}
		rank := map[Op]int{OpCreateRole: 0, OpCreatePool: 1, OpCreateUser: 2, OpCreateToken: 3, OpAddPoolMembers: 4, OpSetACL: 5}
		last := 0
		for i, c := range changes {
			if rank[c.Op] < last {
				t.Errorf("PVE %d change %d (%s) comes after a later kind of step", v, i, c.Op)
			}
			last = rank[c.Op]
			if c.Op == OpCreateRole && strings.HasPrefix(strings.ToLower(c.Role), "pve") {
				t.Errorf("custom role %s uses the reserved PVE prefix", c.Role)
			}
			if c.Op == OpSetACL && c.Path == "/" && slices.Contains(c.Roles, pveacl.RoleAuditor) && c.Propagate {
				t.Errorf("PVEAuditor on / must not propagate: %+v", c)
			}
		}
		ccm := changes[0]
		want := map[pveacl.Version][]string{pveacl.PVE8: {"VM.Audit", "VM.Monitor"}, pveacl.PVE9: {"VM.Audit", "VM.GuestAgent.Audit"}}[v]
		if ccm.Role != RoleCCM || !cmp.Equal(ccm.Privs, want) {
			t.Errorf("PVE %d: first change %+v, want CozyCCM with %v", v, ccm, want)
		}
	}
}

// converged returns the state after applying the example plan to an empty cluster.
func converged(t testing.TB, spec *Tenants) *pveacl.Config {
	t.Helper()
	changes, err := Plan(spec, pveacl.NewConfig(pveacl.PVE9))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Simulate(pveacl.NewConfig(pveacl.PVE9), changes)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestPlanAgainstObservedState(t *testing.T) {
	spec := exampleSpec(t)
	cases := map[string]struct {
		reason string
		mutate func(c *pveacl.Config)
		want   []Change
	}{
		"Converged": {
			reason: "a converged cluster needs nothing",
			mutate: func(*pveacl.Config) {},
		},
		"PrivsepOff": {
			reason: "a token without privilege separation is switched over",
			mutate: func(c *pveacl.Config) { c.Users["alpha@pve"].Tokens["csi"] = pveacl.Token{} },
			want: []Change{{Op: OpUpdateToken, User: "alpha@pve", Token: "csi",
				Reason: "the token is not privilege-separated, so it holds every privilege of its user"}},
		},
		"RoleDrift": {
			reason: "a managed role is reset to its exact privileges",
			mutate: func(c *pveacl.Config) { c.Roles[RoleCSI] = pveacl.Role{Privs: []string{"VM.Allocate", "VM.Audit"}} },
			want: []Change{{Op: OpUpdateRole, Role: RoleCSI, Privs: []string{"VM.Audit", "VM.Config.Disk"},
				Reason: "the role holds VM.Allocate,VM.Audit instead"}},
		},
		"StrayAndFlippedEntries": {
			reason: "stray entries of managed subjects go first, then entries with the wrong flag are set again",
			mutate: func(c *pveacl.Config) {
				c.ACL[pveacl.ACLKey{Path: "/vms", Kind: pveacl.KindToken, Subject: "alpha@pve!ccm", Role: "PVEVMAdmin"}] = true
				c.ACL[pveacl.ACLKey{Path: "/", Kind: pveacl.KindUser, Subject: "alpha@pve", Role: pveacl.RoleAuditor}] = true
				c.ACL[pveacl.ACLKey{Path: "/vms", Kind: pveacl.KindUser, Subject: "someone@pve", Role: "PVEVMAdmin"}] = true
			},
			want: []Change{
				{Op: OpDeleteACL, Path: "/vms", Kind: pveacl.KindToken, Subject: "alpha@pve!ccm", Roles: []string{"PVEVMAdmin"},
					Reason: "a managed subject must hold no other role"},
				{Op: OpSetACL, Path: "/", Kind: pveacl.KindUser, Subject: "alpha@pve", Roles: []string{pveacl.RoleAuditor},
					Reason: "the entry exists with propagate=1"},
			},
		},
		"VMInAnotherPool": {
			reason: "a VM listed for a tenant but sitting in another pool is moved with allow-move",
			mutate: func(c *pveacl.Config) {
				p := c.Pools["alpha"]
				p.VMs = nil
				c.Pools["alpha"] = p
				c.Pools["old"] = pveacl.Pool{VMs: []int{1001}}
			},
			want: []Change{{Op: OpAddPoolMembers, Pool: "alpha", VMs: []int{1001}, AllowMove: true,
				Reason: "the pool lacks these members; VM 1001 is in pool old and moves"}},
		},
		"DisabledUser": {
			reason: "a disabled tenant user is enabled again",
			mutate: func(c *pveacl.Config) { u := c.Users["k8s-beta@pve"]; u.Enable = false; c.Users["k8s-beta@pve"] = u },
			want:   []Change{{Op: OpEnableUser, User: "k8s-beta@pve", Reason: "the user is disabled, so its tokens are refused"}},
		},
		"ExtraMembersStay": {
			reason: "VMs the provider put into a tenant pool are never removed",
			mutate: func(c *pveacl.Config) { p := c.Pools["alpha"]; p.VMs = append(p.VMs, 4242); c.Pools["alpha"] = p },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := converged(t, spec)
			tc.mutate(cfg)
			got, err := Plan(spec, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
			after, err := Simulate(cfg, got)
			if err != nil {
				t.Fatalf("%s: applying the plan: %v", tc.reason, err)
			}
			if again, _ := Plan(spec, after); len(again) != 0 {
				t.Errorf("%s: the plan does not converge, next plan: %+v", tc.reason, again)
			}
		})
	}
}

func TestPlanRefusesVersionMismatch(t *testing.T) {
	_, err := Plan(exampleSpec(t), pveacl.NewConfig(pveacl.PVE8))
	if !errors.Is(err, pveacl.ErrInvalidVersion) || !strings.Contains(err.Error(), "runs PVE 8 but the plan is for PVE 9") {
		t.Errorf("error %v, want a version mismatch naming both versions", err)
	}
}

func TestChangeJSONRoundTrip(t *testing.T) {
	changes, err := Plan(exampleSpec(t), pveacl.NewConfig(pveacl.PVE9))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(changes)
	if err != nil {
		t.Fatal(err)
	}
	var back []Change
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(changes, back); diff != "" {
		t.Errorf("JSON round trip: -want +got:\n%s", diff)
	}
	if strings.Count(string(b), `"propagate"`) != countOp(changes, OpSetACL) {
		t.Errorf("propagate must appear on set-acl changes only:\n%s", b)
	}
}

func countOp(cs []Change, op Op) int {
	n := 0
	for _, c := range cs {
		if c.Op == op {
			n++
		}
	}
	return n
}

func TestApplyRefusals(t *testing.T) {
	cases := map[string]struct {
		reason string
		change Change
		want   string
	}{
		"ReservedPrefix":  {"custom roles cannot start with PVE", Change{Op: OpCreateRole, Role: "PVEMine", Privs: []string{"VM.Audit"}}, "cannot use role ID starting with the (case-insensitive) 'PVE' namespace"},
		"BuiltinModify":   {"built-in roles are fixed", Change{Op: OpUpdateRole, Role: "PVEAuditor", Privs: []string{"VM.Audit"}}, "auto-generated role 'PVEAuditor' cannot be modified"},
		"BadPrivilege":    {"privileges of another version are refused", Change{Op: OpCreateRole, Role: "Mine", Privs: []string{"VM.Monitor"}}, "invalid privilege 'VM.Monitor'"},
		"MissingParent":   {"a nested pool needs its parent", Change{Op: OpCreatePool, Pool: "top/child"}, "parent 'top' of pool 'top/child' does not exist"},
		"PoolMember":      {"a VM in another pool needs allow-move", Change{Op: OpAddPoolMembers, Pool: "b", VMs: []int{100}}, "VM 100 belongs already to pool 'a' and 'allow-move' is not set"},
		"ACLUnknownRole":  {"ACL roles must exist", Change{Op: OpSetACL, Path: "/", Kind: pveacl.KindUser, Subject: "u@pve", Roles: []string{"Nope"}}, "role 'Nope' does not exist"},
		"ACLUnknownUser":  {"ACL users must exist", Change{Op: OpSetACL, Path: "/", Kind: pveacl.KindUser, Subject: "x@pve", Roles: []string{"NoAccess"}}, "user 'x@pve' does not exist"},
		"ACLUnknownToken": {"ACL tokens must exist", Change{Op: OpSetACL, Path: "/", Kind: pveacl.KindToken, Subject: "u@pve!zz", Roles: []string{"NoAccess"}}, "no such token 'zz' for user 'u@pve'"},
		"ACLBadPath":      {"ACL paths are checked when adding", Change{Op: OpSetACL, Path: "/vms/42", Kind: pveacl.KindUser, Subject: "u@pve", Roles: []string{"NoAccess"}}, "invalid ACL path '/vms/42'"},
		"TokenNoUser":     {"tokens need their user", Change{Op: OpCreateToken, User: "x@pve", Token: "tk"}, "user 'x@pve' does not exist"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := pveacl.NewConfig(pveacl.PVE9)
			cfg.Users["u@pve"] = pveacl.User{Enable: true}
			cfg.Pools["a"] = pveacl.Pool{VMs: []int{100}}
			cfg.Pools["b"] = pveacl.Pool{}
			before := string(usercfg.Marshal(cfg))
			_, err := Simulate(cfg, []Change{tc.change})
			var refused *refusedError
			if !errors.As(err, &refused) || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v, want a refusal containing %q", tc.reason, err, tc.want)
			}
			if after := string(usercfg.Marshal(cfg)); after != before {
				t.Errorf("%s: Simulate changed its input", tc.reason)
			}
		})
	}
}

// TestPlanRefusesTakeover: a tenant user that exists without the ownership
// mark and holds rights outside its tenant is not taken over silently; the
// error lists each entry. Controls: a confirmed takeover plans the removal,
// and a user the plan created loses a stray entry without confirmation.
func TestPlanRefusesTakeover(t *testing.T) {
	spec := &Tenants{Tenants: []Tenant{{Name: "b", User: "ops@pve", Storage: "b-disks"}}}
	cases := map[string]struct {
		reason  string
		comment string
		opts    []Option
		err     string
	}{
		"Foreign":   {reason: "ops@pve was not created by a plan", comment: "operations", err: "remove user ops@pve: Administrator on /; name another user"},
		"Confirmed": {reason: "the operator confirms", comment: "operations", opts: []Option{WithConfirmedRemovals("ops@pve")}},
		"Owned":     {reason: "drift of a user a plan created is corrected", comment: "pxsubstrate tenant b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obs := pveacl.NewConfig(pveacl.PVE9)
			obs.Users["ops@pve"] = pveacl.User{Enable: true, Comment: tc.comment}
			obs.ACL[pveacl.ACLKey{Path: "/", Kind: pveacl.KindUser, Subject: "ops@pve", Role: "Administrator"}] = true
			changes, err := Plan(spec, obs, tc.opts...)
			if tc.err != "" {
				if !errors.Is(err, ErrUnconfirmedRemoval) || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("%s: error %v, want %q", tc.reason, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if !slices.ContainsFunc(changes, func(c Change) bool {
				return c.Op == OpDeleteACL && c.Subject == "ops@pve" && c.Path == "/" && slices.Equal(c.Roles, []string{"Administrator"})
			}) {
				t.Errorf("%s: the plan removes Administrator on /: %v", tc.reason, changes)
			}
		})
	}
}
