package pvefake_test

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"testing"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/permvec"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// TestPermissionVectors runs the permission vectors (pveacl/permvec) over
// the fake: each case's user.cfg is loaded, and every "privs", "allow" and
// "deny" check is asked of GET /access/permissions, by the root token for
// any user or token and, for a token of the case, by that token itself.
// The vectors come from PVE's tests and code, not from pveacl's evaluator,
// so an evaluator bug fails here as well as in pveacl.
func TestPermissionVectors(t *testing.T) {
	permvec.Run(t, func(t *testing.T, cfg *pveacl.Config) permvec.Evaluator {
		srv, root := start(t)
		must(t, srv.SetAccessConfig(cfg))
		return fakeEvaluator{srv: srv, root: root}
	})
}

// fakeEvaluator asks the fake's GET /access/permissions. PVE's API has no
// roles query, so it is no permvec.RoleEvaluator: pveacl's test checks the
// roles.
type fakeEvaluator struct {
	srv  *pvefake.Server
	root *proxmox.Client
}

// Privileges asks root for authID's privileges on path and, when authID is
// a token, the token itself, and fails when the two answers differ.
func (e fakeEvaluator) Privileges(authID, path string) ([]string, error) {
	q := url.Values{"path": {path}, "userid": {authID}}
	var byRoot map[string]map[string]int
	if err := e.root.Get(ctx, "/access/permissions?"+q.Encode(), &byRoot); err != nil {
		return nil, fmt.Errorf("asked by root: %w", err)
	}
	got := slices.Sorted(maps.Keys(byRoot[path]))
	secret, isToken := e.srv.TokenSecret(authID)
	if !isToken {
		return got, nil
	}
	var own map[string]map[string]int
	if err := client(e.srv, authID, secret).Get(ctx, "/access/permissions?path="+url.QueryEscape(path), &own); err != nil {
		return nil, fmt.Errorf("asked by the token: %w", err)
	}
	if byToken := slices.Sorted(maps.Keys(own[path])); !slices.Equal(got, byToken) {
		return nil, fmt.Errorf("asked by root: %v; asked by the token itself: %v", got, byToken)
	}
	return got, nil
}
