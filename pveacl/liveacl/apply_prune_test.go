package liveacl_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/pveacltest"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
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
		prune  bool
		betaVM bool
		want   want
	}{
		"NoPrune": {reason: "without prune nothing the specification dropped is touched",
			want: want{users: []string{"alpha@pve", "capmox@pve", "k8s-beta@pve", "ops@pve", "root@pam"}, pools: []string{"alpha", "legacy", "tenant-beta"}}},
		"Prune": {reason: "prune removes beta's owned user and pool, never unmarked objects", prune: true,
			want: want{users: []string{"alpha@pve", "capmox@pve", "ops@pve", "root@pam"}, pools: []string{"alpha", "legacy"}}},
		"PoolWithGuests": {reason: "a pool that still holds guests stays, and the apply says why", prune: true, betaVM: true,
			want: want{users: []string{"alpha@pve", "capmox@pve", "ops@pve", "root@pam"}, pools: []string{"alpha", "legacy", "tenant-beta"},
				kept: []string{"pool tenant-beta"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := cluster(t)
			must(t, srv.AddUser("ops@pve", pveacltest.UserSpec{}))
			must(t, srv.AddPool("legacy", "", nil, nil))
			sink := dirSink(t)
			_, err := liveacl.Apply(ctx, srv.Client(), mustTenants(t, twoTenants), liveacl.WithSecretSink(sink))
			must(t, err)
			if tc.betaVM {
				must(t, srv.AddVM(pveacltest.VMSpec{VMID: 200, Pool: "tenant-beta"}))
			}
			opts := []liveacl.Option{liveacl.WithSecretSink(sink)}
			if tc.prune {
				opts = append(opts, liveacl.WithPrune())
			}
			res, err := liveacl.Apply(ctx, srv.Client(), mustTenants(t, alphaOnly), opts...)
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
				if strings.Contains(k.Subject, "beta") && tc.prune {
					t.Errorf("%s: pruned subjects keep no ACL entry, found %+v", tc.reason, k)
				}
			}
			live, err := liveacl.Read(ctx, srv.Client())
			must(t, err)
			again, kept, err := tenantplan.Prune(mustTenants(t, alphaOnly), live)
			must(t, err)
			if tc.prune && (len(again) != 0 || len(kept) != len(tc.want.kept)) {
				t.Errorf("%s: a prune converges: %v, kept %v", tc.reason, again, kept)
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
