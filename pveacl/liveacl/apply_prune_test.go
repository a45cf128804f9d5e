package liveacl_test

import (
	stdcmp "cmp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

const alphaOnly = `platform:
  capmox:
    user: capmox@pve
    token: capi
  sharedStorages: [local]
tenants:
  - name: alpha
    storage: alpha-disks
    networks:
      - bridge: vmbr1
        vlans: [100]
`

func TestPrune(t *testing.T) {
	type want struct {
		users []string
		pools []string
		kept  []string
	}
	cases := map[string]struct {
		reason string
		prune  []string
		spec   string
		betaVM bool
		want   want
	}{
		"NoPrune": {reason: "without prune nothing the specification dropped is touched",
			want: want{users: []string{"alpha@pve", "capmox@pve", "k8s-beta@pve", "ops@pve", "root@pam"}, pools: []string{"alpha", "legacy", "tenant-beta"}}},
		"Prune": {reason: "prune removes beta's owned user and pool, never unmarked objects", prune: []string{"beta"},
			want: want{users: []string{"alpha@pve", "capmox@pve", "ops@pve", "root@pam"}, pools: []string{"alpha", "legacy"}}},
		"EmptySpecNamesOne": {reason: "with no tenants left, a prune naming beta removes beta only: alpha's and the platform's objects stay, reported",
			prune: []string{"beta"}, spec: "tenants: []\n",
			want: want{users: []string{"alpha@pve", "capmox@pve", "ops@pve", "root@pam"}, pools: []string{"alpha", "legacy"},
				kept: []string{"user alpha@pve", "user capmox@pve", "pool alpha"}}},
		"PoolWithGuests": {reason: "a pool that still holds guests stays, and the apply says why", prune: []string{"beta"}, betaVM: true,
			want: want{users: []string{"alpha@pve", "capmox@pve", "ops@pve", "root@pam"}, pools: []string{"alpha", "legacy", "tenant-beta"},
				kept: []string{"pool tenant-beta"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := cluster(t)
			must(t, srv.AddUser("ops@pve", pvefake.UserSpec{}))
			must(t, srv.AddPool("legacy", "", nil, nil))
			sink := dirSink(t)
			_, err := liveacl.Apply(ctx, srv.Client(), mustTenants(t, twoTenants), liveacl.WithSecretSink(sink))
			must(t, err)
			if tc.betaVM {
				must(t, srv.AddVM(pvefake.VMSpec{VMID: 200, Pool: "tenant-beta"}))
			}
			opts := []liveacl.Option{liveacl.WithSecretSink(sink)}
			if tc.prune != nil {
				opts = append(opts, liveacl.WithPrune(tc.prune...))
			}
			spec := mustTenants(t, stdcmp.Or(tc.spec, alphaOnly))
			res, err := liveacl.Apply(ctx, srv.Client(), spec, opts...)
			must(t, err)
			cfg := srv.AccessConfig()
			got := want{users: keys(cfg.Users), pools: keys(cfg.Pools)}
			for _, k := range res.Kept {
				got.kept = append(got.kept, k.Object)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
			for k := range cfg.ACL {
				if strings.Contains(k.Subject, "beta") && tc.prune != nil {
					t.Errorf("%s: pruned subjects keep no ACL entry, found %+v", tc.reason, k)
				}
			}
			live, err := liveacl.Read(ctx, srv.Client())
			must(t, err)
			if tc.prune == nil {
				return
			}
			_, _, err = tenantplan.Prune(spec, live, []string{"gamma"})
			if err == nil || !strings.Contains(err.Error(), `the cluster holds no user, token or pool of tenant "gamma"`) {
				t.Errorf("%s: a name with nothing to prune is an error: %v", tc.reason, err)
			}
			if tc.betaVM {
				again, kept, err := tenantplan.Prune(spec, live, tc.prune)
				if err != nil || len(again) != 0 || len(kept) != len(tc.want.kept) {
					t.Errorf("%s: a prune converges: %v, kept %v, %v", tc.reason, again, kept, err)
				}
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestPruneRefusals: a prune names what goes. Naming nothing, a tenant the
// specification still lists, or one the cluster does not hold is refused
// before any change; the control names beta and removes it.
func TestPruneRefusals(t *testing.T) {
	cases := map[string]struct {
		reason string
		names  []string
		err    string
	}{
		"NoName":   {reason: "an unnamed prune could wipe every tenant", err: "name the tenants whose objects go"},
		"Listed":   {reason: "alpha is still wanted", names: []string{"alpha"}, err: `tenant "alpha" is still in the specification`},
		"Unknown":  {reason: "a typo must not pass silently", names: []string{"bta"}, err: `the cluster holds no user, token or pool of tenant "bta"`},
		"Admitted": {reason: "the control: beta is named and goes", names: []string{"beta"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := cluster(t)
			sink := dirSink(t)
			_, err := liveacl.Apply(ctx, srv.Client(), mustTenants(t, twoTenants), liveacl.WithSecretSink(sink))
			must(t, err)
			srv.ResetRequests()
			_, err = liveacl.Apply(ctx, srv.Client(), mustTenants(t, alphaOnly), liveacl.WithSecretSink(sink), liveacl.WithPrune(tc.names...))
			if tc.err == "" {
				must(t, err)
				if _, ok := srv.AccessConfig().Users["k8s-beta@pve"]; ok {
					t.Errorf("%s: beta's user is gone", tc.reason)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.reason, err, tc.err)
			}
			if m := srv.MutatingRequests(); len(m) != 0 {
				t.Errorf("%s: a refused prune changes nothing: %v", tc.reason, m)
			}
		})
	}
}
