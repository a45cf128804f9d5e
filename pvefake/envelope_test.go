package pvefake_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

func TestErrorEnvelopes(t *testing.T) {
	srv, _ := start(t)
	grantee(t, srv, "weak@pve", nil)
	secret, ok := srv.TokenSecret("weak@pve!tk")
	if !ok {
		t.Fatal("the grantee's token has no secret")
	}
	weakAuth := "PVEAPIToken=weak@pve!tk=" + secret
	cases := map[string]struct {
		reason string
		method string
		path   string
		auth   string
		body   string
		status string
		want   map[string]any
	}{
		"Die": {reason: "a plain die is a 500 whose reason phrase is the message",
			method: "GET", path: "/nodes/pve/qemu/555/config", auth: rootAuth(srv),
			status: "500 Configuration file 'nodes/pve/qemu-server/555.conf' does not exist",
			want:   map[string]any{"data": nil, "message": "Configuration file 'nodes/pve/qemu-server/555.conf' does not exist\n"}},
		"Param": {reason: "raise_param_exc is a 400 with per-parameter errors",
			method: "PUT", path: "/access/acl", auth: rootAuth(srv), body: "path=/&roles=PVEAuditor",
			status: "400 Parameter verification failed.",
			want: map[string]any{"data": nil, "message": "Parameter verification failed.\n", "errors": map[string]any{
				"users": "either 'users', 'groups' or 'tokens' is required.", "groups": "either 'users', 'groups' or 'tokens' is required.",
				"tokens": "either 'users', 'groups' or 'tokens' is required."}}},
		"Perm": {reason: "a missing privilege is a 403 naming path and privilege",
			method: "GET", path: "/nodes/pve/status", auth: weakAuth,
			status: "403 Permission check failed (/nodes/pve, Sys.Audit)",
			want:   map[string]any{"data": nil, "message": "Permission check failed (/nodes/pve, Sys.Audit)\n"}},
		"Unknown": {reason: "an unknown path is not implemented",
			method: "GET", path: "/nope", auth: rootAuth(srv), status: "501 Method 'GET /nope' not implemented",
			want: map[string]any{"data": nil, "message": "Method 'GET /nope' not implemented"}},
		"Schema": {reason: "parameters outside the schema are refused",
			method: "POST", path: "/pools", auth: rootAuth(srv), body: "poolid=a&color=red",
			status: "400 Parameter verification failed.",
			want: map[string]any{"data": nil, "message": "Parameter verification failed.\n", "errors": map[string]any{
				"color": "property is not defined in schema and the schema does not allow additional properties"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var status, got string
			if tc.body != "" {
				status, got = raw(t, srv, tc.method, tc.path, tc.auth, strings.NewReader(tc.body))
			} else {
				status, got = raw(t, srv, tc.method, tc.path, tc.auth, nil)
			}
			if status != tc.status {
				t.Errorf("%s: status %q, want %q", tc.reason, status, tc.status)
			}
			var env map[string]any
			if err := json.Unmarshal([]byte(got), &env); err != nil {
				t.Fatalf("%s: body %q is not JSON: %v", tc.reason, got, err)
			}
			if diff := cmp.Diff(tc.want, env); diff != "" {
				t.Errorf("%s: body -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGoProxmoxErrorClasses(t *testing.T) {
	srv, root := start(t)
	weak := grantee(t, srv, "weak@pve", nil)
	_, err := root.NodeRef("pve").VirtualMachine(ctx, 555)
	if !proxmox.IsNotFound(err) {
		t.Errorf("a missing guest must read as not found through go-proxmox, got %v", err)
	}
	err = weak.NodeRef("pve").StorageRef("local").Ping(ctx)
	if !proxmox.IsForbidden(err) || !strings.Contains(err.Error(), "Permission check failed (/storage/local, Datastore.Audit|Datastore.AllocateSpace)") {
		t.Errorf("a missing privilege must be a 403 naming it, got %v", err)
	}
	err = root.UpdateACL(ctx, proxmox.ACLOptions{Path: "/nope", Roles: "PVEAuditor", Users: "root@pam", Propagate: true})
	if !proxmox.IsBadRequest(err) {
		t.Errorf("an invalid path must be a 400, got %v", err)
	}
}

func TestInjectedFaults(t *testing.T) {
	srv, root := start(t)
	must(t, srv.InjectError(pvefake.Fault{Method: "GET", Path: `^/version$`, Status: 503, Message: "service unavailable", Times: 1}))
	must(t, srv.InjectError(pvefake.Fault{Path: `^/pools$`, Status: 400, Param: "poolid", Message: "pool is busy"}))
	_, err := root.Version(ctx)
	wantMessage(t, "the first GET /version fails as injected", err, "service unavailable")
	_, err = root.Version(ctx)
	wantMessage(t, "Times: 1 fails once only", err, "")
	err = root.NewPool(ctx, "a", "")
	wantMessage(t, "a 400 fault carries its parameter", err, "poolid: pool is busy")
	srv.ClearFaults()
	wantMessage(t, "cleared faults are gone", root.NewPool(ctx, "a", ""), "")
	if err := srv.InjectError(pvefake.Fault{Path: "(", Status: 500}); err == nil {
		t.Error("an invalid path pattern must be refused")
	}
	if err := srv.InjectError(pvefake.Fault{Path: ".", Status: 200}); err == nil {
		t.Error("a non-error status must be refused")
	}
}

func TestLatency(t *testing.T) {
	srv, root := start(t)
	srv.SetLatency(time.Hour)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := root.Version(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request slower than its deadline must fail with the deadline, got %v", err)
	}
	srv.SetLatency(0)
	if _, err := root.Version(ctx); err != nil {
		t.Errorf("without latency the request succeeds: %v", err)
	}
}

func TestRequestLog(t *testing.T) {
	srv, root := start(t)
	srv.ResetRequests()
	_, _ = root.Version(ctx)
	must(t, root.NewPool(ctx, "a", ""))
	_ = root.NewPool(ctx, "a", "")
	root1 := srv.RootTokenID
	want := []pvefake.Request{{Method: "POST", Path: "/api2/json/pools", Status: 200, User: root1}, {Method: "POST", Path: "/api2/json/pools", Status: 500, User: root1}}
	if diff := cmp.Diff(want, srv.MutatingRequests()); diff != "" {
		t.Errorf("mutating requests (failed ones count too), with their answers' status: -want +got:\n%s", diff)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("every request is logged: got %d, want 3", n)
	}
	// A token without a privilege is denied, and Denied names the request.
	tok, err := srv.AddToken("root@pam", "nobody", pvefake.TokenSpec{Privsep: true})
	must(t, err)
	_ = srv.TokenClient("root@pam!nobody", tok).NewPool(ctx, "b", "")
	if diff := cmp.Diff([]pvefake.Request{{Method: "POST", Path: "/api2/json/pools", Status: 403, User: "root@pam!nobody"}}, srv.Denied()); diff != "" {
		t.Errorf("denied requests: -want +got:\n%s", diff)
	}
}

// TestRequestUser: each request names who it authenticated as, the full
// token id, so that tenants sharing one server can each be held to their
// own requests; a request that failed authentication names no one, and a
// ticket's request names the ticket's user.
func TestRequestUser(t *testing.T) {
	srv, root := start(t)
	tokA, err := srv.AddToken("root@pam", "ta", pvefake.TokenSpec{Privsep: true})
	must(t, err)
	tokB, err := srv.AddToken("root@pam", "tb", pvefake.TokenSpec{Privsep: true})
	must(t, err)
	srv.ResetRequests()
	_, _ = root.Version(ctx)
	_ = srv.TokenClient("root@pam!ta", tokA).NewPool(ctx, "pa", "")
	_ = srv.TokenClient("root@pam!tb", tokB).NewPool(ctx, "pb", "")
	_ = srv.TokenClient("root@pam!tb", "not-the-secret").NewPool(ctx, "pc", "")
	users := map[string]int{}
	for _, r := range srv.Requests() {
		users[r.User]++
	}
	if users[srv.RootTokenID] == 0 || users["root@pam!ta"] == 0 || users["root@pam!tb"] == 0 || users[""] == 0 {
		t.Errorf("requests by user %v: want the root token's, a's, b's and a failed authentication's (no user)", users)
	}
	for _, d := range srv.Denied() {
		if d.User != "root@pam!ta" && d.User != "root@pam!tb" {
			t.Errorf("denied %s %s names %q, not the token that was denied", d.Method, d.Path, d.User)
		}
	}
	if n := len(srv.Denied()); n != 2 {
		t.Errorf("denied %v: want a's and b's pool creation", srv.Denied())
	}
	if status, _ := raw(t, srv, "DELETE", "/version", rootAuth(srv), nil); !strings.HasPrefix(status, "501") {
		t.Fatalf("DELETE /version: %q, want 501", status)
	}
	if u := srv.Unserved(); len(u) != 1 || u[0].User != srv.RootTokenID {
		t.Errorf("unserved %v: want DELETE /version by %s", u, srv.RootTokenID)
	}
}

// TestUnreachableNodeAnswer: a request pveproxy cannot proxy to a node is
// answered with AnyEvent::HTTP's status 595 and the system error as the
// reason phrase, and no body (pve-http-server's proxy_request passes the
// undefined body on). go-proxmox v0.6 and v0.2.1 decode every 595 body
// (proxmox.go handleResponse), so an empty one is their decoding error, not
// a success with no data; v0.10 reads any status outside 2xx as an error.
func TestUnreachableNodeAnswer(t *testing.T) {
	srv, root := start(t, pvefake.WithNodes("pve", "pve2"))
	srv.SetNodeUnreachable("pve2", true)
	status, body := raw(t, srv, "GET", "/nodes/pve2/status", rootAuth(srv), nil)
	if status != "595 No route to host" || body != "" {
		t.Errorf("an unreachable node: status %q, body %q; want 595 No route to host and no body", status, body)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(body), &env); err == nil {
		t.Error("a client decoding the 595 body must fail, as go-proxmox v0.6's handleResponse does on PVE's")
	}
	_, err := root.Node(ctx, "pve2")
	var ae *proxmox.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 595 {
		t.Errorf("go-proxmox v0.10 reads the 595 as an error: %v", err)
	}
	if status, _ := raw(t, srv, "GET", "/nodes/pve/status", rootAuth(srv), nil); status != "200 OK" {
		t.Errorf("the other node still answers: %q", status)
	}
}

// TestUnserved: every request the server has no method for is listed by
// method and path, also when the path exists with another method, so a
// test driving a whole client can name each call the server missed.
func TestUnserved(t *testing.T) {
	srv, root := start(t)
	_, _ = root.Version(ctx)
	cases := []struct{ method, path, status string }{
		{"GET", "/nodes/pve/lxc/100/status/current", "501 Method 'GET /nodes/pve/lxc/100/status/current' not implemented"},
		{"DELETE", "/version", "501 Method 'DELETE /version' not implemented"},
	}
	for _, tc := range cases {
		if status, _ := raw(t, srv, tc.method, tc.path, rootAuth(srv), nil); status != tc.status {
			t.Errorf("%s %s: status %q, want %q", tc.method, tc.path, status, tc.status)
		}
	}
	want := []pvefake.Request{{Method: "GET", Path: "/api2/json/nodes/pve/lxc/100/status/current", User: srv.RootTokenID},
		{Method: "DELETE", Path: "/api2/json/version", User: srv.RootTokenID}}
	if diff := cmp.Diff(want, srv.Unserved()); diff != "" {
		t.Errorf("unserved requests, served ones left out: -want +got:\n%s", diff)
	}
	srv.ResetRequests()
	if got := srv.Unserved(); len(got) != 0 {
		t.Errorf("ResetRequests forgets the unserved requests too: %v", got)
	}
}
