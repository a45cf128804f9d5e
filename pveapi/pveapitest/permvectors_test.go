package pveapitest_test

import (
	"net/url"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/internal/permvec"
	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// TestPermissionVectors runs the permission vectors (internal/permvec) over
// the fake: each case's user.cfg is loaded, and every "privs", "allow" and
// "deny" check is asked of GET /access/permissions, by the root token for
// any user or token and, for a token of the case, by that token itself.
// The vectors come from PVE's tests and code, not from pveacl's evaluator,
// so an evaluator bug fails here as well as in pveacl.
func TestPermissionVectors(t *testing.T) {
	permvec.Run(t, func(t *testing.T, tc permvec.Case, cfg *pveacl.Config) {
		srv, root := start(t)
		must(t, srv.SetAccessConfig(cfg))
		for _, c := range tc.Checks {
			if c.Kind == permvec.Roles {
				continue // PVE's API has no roles query; pveacl's test checks them
			}
			q := url.Values{"path": {c.Path}, "userid": {c.AuthID}}
			var byRoot map[string]map[string]int
			must(t, root.Get(ctx, "/access/permissions?"+q.Encode(), &byRoot))
			if diff := cmp.Diff(c.Want, answer(c, byRoot[c.Path])); diff != "" {
				t.Errorf("%s %s\n%s, asked by root: -want +got:\n%s", tc.File, tc.Reason, c, diff)
			}
			secret, isToken := srv.TokenSecret(c.AuthID)
			if !isToken {
				continue
			}
			var own map[string]map[string]int
			must(t, client(srv, c.AuthID, secret).Get(ctx, "/access/permissions?path="+url.QueryEscape(c.Path), &own))
			if diff := cmp.Diff(c.Want, answer(c, own[c.Path])); diff != "" {
				t.Errorf("%s %s\n%s, asked by the token: -want +got:\n%s", tc.File, tc.Reason, c, diff)
			}
		}
	})
}

// answer is what the privileges on the path say, in the check's terms.
func answer(c permvec.Check, privs map[string]int) []string {
	if c.Kind == permvec.Privs {
		var got []string
		for p := range privs {
			got = append(got, p)
		}
		slices.Sort(got)
		return got
	}
	if _, has := privs[c.Want[0]]; has == (c.Kind == permvec.Allow) {
		return c.Want
	}
	return []string{"not " + c.Want[0]}
}
