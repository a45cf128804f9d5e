package liveacl_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestApplyConvergesOnRandomState draws tenant sets and a random
// pre-existing cluster (some of the tenants' users, tokens, pools and
// roles already there, disabled or wrong; stray entries; guests in other
// pools; objects nobody manages), applies live through go-proxmox and
// checks: the next plan is empty, a second apply sends no changing
// request, unmanaged objects are untouched, and the fake ends where the
// pure simulator (tenantplan.Simulate) says PVE ends.
func TestApplyConvergesOnRandomState(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		srv, err := pvefake.New(pvefake.WithVersion(rapid.SampledFrom([]pveacl.Version{pveacl.PVE8, pveacl.PVE9}).Draw(rt, "version")))
		if err != nil {
			rt.Fatal(err)
		}
		defer srv.Close()
		spec := drawTenants(rt)
		seedState(rt, srv, spec)
		c := rootClient(srv)
		before, err := liveacl.Read(ctx, c)
		if err != nil {
			rt.Fatal(err)
		}
		unmanaged := unmanagedView(srv.AccessConfig())
		sink := memSink{}
		res, err := liveacl.Apply(ctx, c, spec, liveacl.WithSecretSink(sink))
		adopted := strayOfUnowned(before, spec)
		switch {
		case len(adopted) > 0 && !errors.Is(err, tenantplan.ErrUnconfirmedRemoval):
			rt.Fatalf("apply removes the entries of %v, which it did not create, without confirmation: %v", adopted, err)
		case len(adopted) > 0:
			if m := srv.MutatingRequests(); len(m) != 0 {
				rt.Fatalf("an unconfirmed apply changes nothing: %v", m)
			}
			res, err = liveacl.Apply(ctx, c, spec, liveacl.WithSecretSink(sink), liveacl.WithConfirmedRemovals(adopted...))
		}
		if err != nil {
			rt.Fatalf("apply: %v", err)
		}
		names := map[string]string{}
		for _, st := range res.Secrets {
			if prev, ok := names[liveacl.SecretName(st.TokenID)]; ok {
				rt.Fatalf("%s and %s share a secret name", prev, st.TokenID)
			}
			names[liveacl.SecretName(st.TokenID)] = st.TokenID
		}
		after, err := liveacl.Read(ctx, c)
		if err != nil {
			rt.Fatal(err)
		}
		if next, err := tenantplan.Plan(spec, after, tenantplan.WithVersion(after.Version)); err != nil || len(next) != 0 {
			rt.Fatalf("the plan after apply must be empty: %v %v", next, err)
		}
		if diff := cmp.Diff(unmanaged, unmanagedView(srv.AccessConfig())); diff != "" {
			rt.Fatalf("unmanaged objects changed: -before +after:\n%s", diff)
		}
		var changes []tenantplan.Change
		for _, a := range res.Applied {
			changes = append(changes, a.Change)
		}
		model, err := tenantplan.Simulate(before, changes)
		if err != nil {
			rt.Fatalf("the simulator refuses what the fake accepted: %v", err)
		}
		opts := []cmp.Option{cmpopts.EquateEmpty(), cmpopts.IgnoreFields(pveacl.Config{}, "Resources")}
		if diff := cmp.Diff(model, after, opts...); diff != "" {
			rt.Fatalf("fake and simulator disagree: -simulator +fake:\n%s", diff)
		}
		srv.ResetRequests()
		if _, err := liveacl.Apply(ctx, c, spec, liveacl.WithSecretSink(sink)); err != nil {
			rt.Fatal(err)
		}
		if m := srv.MutatingRequests(); len(m) != 0 {
			rt.Fatalf("a second apply must not change anything: %v", m)
		}
	})
}

// strayOfUnowned returns the tenant users and tokens that exist without
// the ownership mark and hold an entry the plan does not want: an apply may
// remove those entries only when they are confirmed.
func strayOfUnowned(before *pveacl.Config, spec *tenantplan.Tenants) []string {
	want, err := tenantplan.Simulate(pveacl.NewConfig(before.Version), mustPlan(spec, pveacl.NewConfig(before.Version)))
	if err != nil {
		panic(err)
	}
	var out []string
	for k := range before.ACL {
		if _, ok := want.ACL[k]; ok || !managedBy(spec, k.Subject) {
			continue
		}
		comment := before.Users[k.Subject].Comment
		if k.Kind == pveacl.KindToken {
			uid, name, _ := pveacl.ParseTokenID(k.Subject)
			comment = before.Users[uid].Tokens[name].Comment
		}
		if !strings.HasPrefix(comment, "pxsubstrate ") && !slices.Contains(out, k.Subject) {
			out = append(out, k.Subject)
		}
	}
	return out
}

func managedBy(spec *tenantplan.Tenants, subject string) bool {
	if c := spec.Platform.Capmox; c != nil && (subject == c.User || subject == c.TokenID()) {
		return true
	}
	for _, t := range spec.Tenants {
		csi, ccm := t.TokenIDs()
		if subject == t.User || subject == csi || subject == ccm {
			return true
		}
	}
	return false
}

func mustPlan(spec *tenantplan.Tenants, c *pveacl.Config) []tenantplan.Change {
	changes, err := tenantplan.Plan(spec, c, tenantplan.WithVersion(c.Version))
	if err != nil {
		panic(err)
	}
	return changes
}

// memSink keeps secrets in memory; the file sinks have their own tests.
type memSink map[string]string

// Check refuses a token whose secret is already kept, as the file sinks do.
func (m memSink) Check(ids []string) error {
	for _, id := range ids {
		if _, ok := m[id]; ok {
			return fmt.Errorf("%w: %s", liveacl.ErrSecretExists, id)
		}
	}
	return nil
}
func (m memSink) Store(s liveacl.TokenSecret) (string, error) {
	m[s.TokenID] = s.Secret.Reveal()
	return "memory", nil
}

func rootClient(srv *pvefake.Server) pveapi.Client {
	return srv.Client()
}

func drawTenants(rt *rapid.T) *tenantplan.Tenants {
	spec := &tenantplan.Tenants{}
	if rapid.Bool().Draw(rt, "capmox") {
		spec.Platform.Capmox = &tenantplan.Credential{User: "capmox@pve", Token: "capi"}
	}
	names := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"ta", "tb", "tc"}), 1, 3, rapid.ID[string]).Draw(rt, "tenants")
	vms := rapid.Permutation([]int{100, 101, 102, 103}).Draw(rt, "vms")
	for i, n := range names {
		tn := tenantplan.Tenant{Name: n, Storage: n + "-disks"}
		if rapid.Bool().Draw(rt, "customUser") {
			tn.User = "k8s-" + n + "@pve"
		}
		if i < len(vms) && rapid.Bool().Draw(rt, "ownsVM") {
			tn.VMs = []int{vms[i]}
		}
		if spec.Platform.Capmox != nil && rapid.Bool().Draw(rt, "network") {
			tn.Networks = []tenantplan.Network{{Bridge: "vmbr1", VLANs: []int{100 + i}}}
		}
		spec.Tenants = append(spec.Tenants, tn)
	}
	spec = spec.Defaulted()
	return spec
}

// seedState puts a random part of the tenants' objects (some of them
// wrong) and unmanaged objects on the server.
func seedState(rt *rapid.T, srv *pvefake.Server, spec *tenantplan.Tenants) {
	check := func(err error) {
		if err != nil {
			rt.Fatal(err)
		}
	}
	check(srv.AddUser("other@pve", pvefake.UserSpec{Comment: "someone else"}))
	check(srv.AddPool("otherpool", "", nil, nil))
	check(srv.SetACL("/pool/otherpool", pveacl.KindUser, "other@pve", true, "PVEVMAdmin"))
	for _, vm := range []int{100, 101, 102, 103} {
		pool := rapid.SampledFrom([]string{"", "otherpool"}).Draw(rt, fmt.Sprintf("pool%d", vm))
		check(srv.AddVM(pvefake.VMSpec{VMID: vm, Pool: pool}))
	}
	if rapid.Bool().Draw(rt, "wrongRole") {
		check(srv.AddRole(tenantplan.RoleCSI, "VM.Audit"))
	}
	for _, tn := range spec.Tenants {
		check(srv.AddStorage(pvefake.StorageSpec{ID: tn.Storage, Type: "lvmthin", Content: []string{"images"}}))
		seedTenant(rt, srv, tn, check)
	}
}

func seedTenant(rt *rapid.T, srv *pvefake.Server, tn tenantplan.Tenant, check func(error)) {
	if rapid.Bool().Draw(rt, "poolExists") {
		check(srv.AddPool(tn.Pool, "", nil, nil))
	}
	if !rapid.Bool().Draw(rt, "userExists") {
		return
	}
	check(srv.AddUser(tn.User, pvefake.UserSpec{Disabled: rapid.Bool().Draw(rt, "disabled")}))
	csi, _ := tn.TokenIDs()
	if rapid.Bool().Draw(rt, "tokenExists") {
		_, err := srv.AddToken(tn.User, tn.Tokens.CSI, pvefake.TokenSpec{Privsep: rapid.Bool().Draw(rt, "privsep")})
		check(err)
		if rapid.Bool().Draw(rt, "strayTokenACL") {
			check(srv.SetACL("/vms", pveacl.KindToken, csi, true, "PVEVMAdmin"))
		}
	}
	if rapid.Bool().Draw(rt, "strayUserACL") {
		path := rapid.SampledFrom([]string{"/", "/vms", "/storage", "/pool/otherpool"}).Draw(rt, "strayPath")
		check(srv.SetACL(path, pveacl.KindUser, tn.User, rapid.Bool().Draw(rt, "strayProp"), "PVEAuditor"))
	}
}

// unmanagedView is what an apply must leave alone.
func unmanagedView(c *pveacl.Config) map[string]any {
	var acl []pveacl.ACE
	for _, e := range c.ACEs() {
		if e.Subject == "other@pve" {
			acl = append(acl, e)
		}
	}
	return map[string]any{"user": c.Users["other@pve"], "acl": acl, "pool": c.Pools["otherpool"].Comment}
}
