package pvefake_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

type quiet struct{}

func (quiet) Debugf(string, ...any) {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Infof(string, ...any)  {}
func (quiet) Warnf(string, ...any)  {}

// start runs a server for one test and returns a root-token client.
func start(t *testing.T, opts ...pvefake.Option) (*pvefake.Server, *proxmox.Client) {
	t.Helper()
	srv, err := pvefake.New(opts...)
	if err != nil {
		t.Fatalf("cannot start the fake: %v", err)
	}
	t.Cleanup(srv.Close)
	return srv, client(srv, srv.RootTokenID, srv.RootSecret)
}

func client(srv *pvefake.Server, id, secret string) *proxmox.Client {
	return proxmox.NewClient(srv.URL, proxmox.WithHTTPClient(srv.HTTPClient()), proxmox.WithAPIToken(id, secret),
		proxmox.WithLogger(quiet{}))
}

// grantee is a user with a privilege-separated token "tk" and the roles
// given on paths (propagated), granted to both the user and the token.
func grantee(t *testing.T, srv *pvefake.Server, user string, grants map[string][]string) *proxmox.Client {
	t.Helper()
	must(t, srv.AddUser(user, pvefake.UserSpec{}))
	secret, err := srv.AddToken(user, "tk", pvefake.TokenSpec{Privsep: true})
	must(t, err)
	for path, roles := range grants {
		must(t, srv.SetACL(path, pveacl.KindUser, user, true, roles...))
		must(t, srv.SetACL(path, pveacl.KindToken, user+"!tk", true, roles...))
	}
	return client(srv, user+"!tk", secret)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// raw sends a request and returns the status line and body.
func raw(t *testing.T, srv *pvefake.Server, method, path, auth string, body io.Reader) (string, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, body)
	must(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := srv.HTTPClient().Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.Status, string(b)
}

func rootAuth(srv *pvefake.Server) string {
	return "PVEAPIToken=" + srv.RootTokenID + "=" + srv.RootSecret
}

// wait waits for a task and returns its failure, if any.
func wait(task *proxmox.Task, err error) error {
	if err != nil {
		return err
	}
	return task.Wait(context.Background(), time.Millisecond, 5*time.Second)
}

// message returns PVE's message of an API error, or the error text.
func message(err error) string {
	if err == nil {
		return ""
	}
	var ae *proxmox.APIError
	if errors.As(err, &ae) {
		msg := strings.TrimSpace(ae.Message)
		for k, v := range ae.Errors {
			msg += " | " + k + ": " + v
		}
		return msg
	}
	var tf *proxmox.TaskFailedError
	if errors.As(err, &tf) {
		return "task failed: " + tf.ExitStatus
	}
	return err.Error()
}

// wantMessage fails unless err's message contains want ("" = no error).
func wantMessage(t *testing.T, reason string, err error, want string) {
	t.Helper()
	got := message(err)
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: unexpected error %q", reason, got)
	case want != "" && !strings.Contains(got, want):
		t.Errorf("%s: error %q does not contain %q", reason, got, want)
	}
}

var ctx = context.Background()

// endpointCase is one row of an endpoint table: a request, who sends it
// and what PVE answers.
type endpointCase struct {
	reason string
	grants map[string][]string // nil: the root token
	method string
	path   string
	body   map[string]any
	want   string // a part of the error, "" for success
}

// request sends one request of an endpoint table as c and returns its error.
func request(c *proxmox.Client, method, path string, body any) error {
	var out any
	switch method {
	case "GET":
		return c.Get(ctx, path, &out)
	case "POST":
		return c.Post(ctx, path, body, &out)
	case "PUT":
		return c.Put(ctx, path, body, &out)
	case "DELETE":
		return c.Delete(ctx, path, &out)
	}
	return fmt.Errorf("no method %q", method)
}

// wantDenied fails t when srv's Denied list does not hold a request
// exactly when want is PVE's permission refusal.
func wantDenied(t *testing.T, srv *pvefake.Server, reason, want string) {
	t.Helper()
	denied := len(srv.Denied()) > 0
	if w := strings.Contains(want, "Permission check failed"); denied != w {
		t.Errorf("%s: Denied() lists the request: %v, want %v", reason, denied, w)
	}
}
