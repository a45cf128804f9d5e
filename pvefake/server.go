package pvefake

import (
	"context"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// BasePath is the prefix of every API path.
const BasePath = "/api2/json"

// RootTokenName is the sub-id of the token New creates for root@pam.
const RootTokenName = "pxfake"

// Server is a running fake Proxmox VE API. Its methods are safe for
// concurrent use.
type Server struct {
	// URL is the API base URL, ending in /api2/json, as go-proxmox's
	// NewClient expects it.
	URL string
	// RootTokenID and RootSecret authenticate as root@pam (privilege
	// separation off, so the token holds every privilege).
	RootTokenID string
	RootSecret  string

	ts     *httptest.Server
	rt     *router
	cfg    config
	mu     sync.Mutex
	st     *state
	faults faults
	boots  bootLog
	// ctx ends when the server closes (the boot hook's context).
	ctx    context.Context
	cancel context.CancelFunc
}

// Option configures New.
type Option func(*config)

type config struct {
	version    pveacl.Version
	tls        bool
	latency    time.Duration
	taskTime   time.Duration
	cluster    string
	nodes      []string
	now        func() time.Time
	downloader Downloader
	release    string
	bootHook   BootHook
	fenceDelay *time.Duration
}

// WithVersion sets the Proxmox VE major version (8 or 9; default 9). It
// decides the privilege table, the built-in roles and GET /version.
func WithVersion(v pveacl.Version) Option { return func(c *config) { c.version = v } }

// WithTLS serves HTTPS with httptest's self-signed certificate.
func WithTLS() Option { return func(c *config) { c.tls = true } }

// WithLatency delays every request by d (before authentication).
func WithLatency(d time.Duration) Option { return func(c *config) { c.latency = d } }

// WithTaskDuration makes worker tasks report "running" for d after they
// start; their effect on the state is immediate. Default 0.
func WithTaskDuration(d time.Duration) Option { return func(c *config) { c.taskTime = d } }

// WithCluster names the cluster; without it the nodes form a standalone
// installation and GET /cluster/status lists only nodes.
func WithCluster(name string) Option { return func(c *config) { c.cluster = name } }

// WithNodes names the nodes (default one node, "pve").
func WithNodes(names ...string) Option { return func(c *config) { c.nodes = names } }

// WithClock replaces time.Now (token and user expiry, task times).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithDownloader replaces the HTTP client download-url uses.
func WithDownloader(d Downloader) Option { return func(c *config) { c.downloader = d } }

// New starts a server with root@pam, its token RootTokenName, the nodes
// and a "local" directory storage (iso, vztmpl, import, backup, snippets)
// and a "local-lvm" thin pool (images, rootdir) on each node. Close it when
// done.
func New(opts ...Option) (*Server, error) {
	c := config{version: pveacl.DefaultVersion, nodes: []string{"pve"}, now: time.Now, downloader: httpDownloader{}}
	for _, o := range opts {
		o(&c)
	}
	if err := c.version.Validate(); err != nil {
		return nil, fmt.Errorf("cannot start the fake Proxmox VE API: %w", err)
	}
	if err := c.checkRelease(); err != nil {
		return nil, fmt.Errorf("cannot start the fake Proxmox VE API: %w", err)
	}
	srv := &Server{cfg: c, st: newState(c.version, c.now, newUUID)}
	srv.st.fenceDelay = DefaultHAFenceDelay
	if c.fenceDelay != nil {
		srv.st.fenceDelay = *c.fenceDelay
	}
	srv.ctx, srv.cancel = context.WithCancel(context.Background())
	srv.rt = srv.routes()
	srv.st.cluster = c.cluster
	for _, n := range c.nodes {
		if err := srv.AddNode(n); err != nil {
			return nil, err
		}
	}
	for _, s := range []StorageSpec{
		{ID: "local", Type: "dir", Content: []string{"iso", "vztmpl", "import", "backup", "snippets"}},
		{ID: "local-lvm", Type: "lvmthin", Content: []string{"images", "rootdir"}},
	} {
		if err := srv.AddStorage(s); err != nil {
			return nil, err
		}
	}
	secret, err := srv.AddToken("root@pam", RootTokenName, TokenSpec{})
	if err != nil {
		return nil, err
	}
	srv.RootTokenID, srv.RootSecret = pveacl.TokenID("root@pam", RootTokenName), secret
	srv.ts = httptest.NewUnstartedServer(srv)
	srv.ts.Config.ErrorLog = log.New(io.Discard, "", 0) // a client refusing the certificate is a test's business
	if c.tls {
		srv.ts.StartTLS()
	} else {
		srv.ts.Start()
	}
	srv.URL = srv.ts.URL + BasePath
	return srv, nil
}

// Close shuts the server down.
func (srv *Server) Close() {
	srv.cancel()
	srv.ts.Close()
}

// HTTPClient returns a client that trusts the server's certificate.
func (srv *Server) HTTPClient() *http.Client { return srv.ts.Client() }

// CertificatePEM returns the server's TLS certificate in PEM (nil without
// WithTLS), for clients that take a CA file.
func (srv *Server) CertificatePEM() []byte {
	if srv.ts.Certificate() == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.ts.Certificate().Raw})
}

// ServeHTTP serves one request: latency, authentication, injected faults,
// routing, the declared permission check, parameter validation and the
// handler, in that order (PVE checks permissions before it validates).
func (srv *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := srv.faults.count(r.Method, r.URL.Path)
	if d := srv.faults.delay(srv.cfg.latency); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	rel, ok := strings.CutPrefix(r.URL.Path, BasePath)
	if !ok || (rel != "" && rel[0] != '/') {
		srv.faults.unservedRequest(r.Method, r.URL.Path, "")
		srv.faults.answered(i, http.StatusNotImplemented)
		writeError(w, &apiError{Status: http.StatusNotImplemented, Msg: "no such uri"})
		return
	}
	if rel == "" {
		rel = "/"
	}
	data, total, err := srv.serve(r, rel, i)
	if err != nil {
		// an answer before the body is read (a refused upload) must not
		// meet a client still sending it
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxUpload+1))
		srv.faults.answered(i, err.Status)
		writeError(w, err)
		return
	}
	srv.faults.answered(i, http.StatusOK)
	writeData(w, data, total)
}

// serve answers request i (faults.count's index) once authenticated.
func (srv *Server) serve(r *http.Request, rel string, i int) (any, *int, *apiError) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.st.haTick()
	value, ok := ParseAuthHeader(r.Header.Get("Authorization"))
	if !ok {
		return nil, nil, unauthorized("No ticket")
	}
	auth, err := srv.st.verifyToken(value, srv.st.now())
	if err != nil {
		srv.faults.authFailed(err)
		return nil, nil, unauthorized("Authentication failed!")
	}
	srv.faults.authenticated(i, auth)
	if e := srv.faults.injected(r.Method, rel); e != nil {
		return nil, nil, e
	}
	rt, vars := srv.rt.match(r.Method, rel)
	if rt == nil {
		srv.faults.unservedRequest(r.Method, r.URL.Path, auth)
		return nil, nil, notImplemented(r.Method, rel)
	}
	if rt.upload {
		return srv.serveUpload(r, rt, vars, auth)
	}
	p, arrays, perr := readParams(r)
	if perr != nil {
		return nil, nil, perr
	}
	for k, v := range vars {
		p[k] = v
	}
	if e := srv.st.unreachableErr(vars["node"]); e != nil {
		return nil, nil, e
	}
	c := &call{srv: srv, s: srv.st, r: r, auth: auth, p: p, lists: arrays, node: vars["node"]}
	return srv.handle(c, rt)
}

// handle runs the declared permission check, the parameter validation and
// the handler of a routed call.
func (srv *Server) handle(c *call, rt *route) (any, *int, *apiError) {
	p := c.p
	if rt.check != nil {
		if _, e := rt.check.eval(c, false); e != nil {
			return nil, nil, e
		}
	}
	if e := validate(p, c.lists, rt.schema, rt.extra); e != nil {
		return nil, nil, e
	}
	data, e := rt.handle(c)
	return data, c.total, e
}

// serveUpload serves a file upload: the upload permission first (a 403
// without a body, as auth_handler raises it), then the body as pveproxy
// reads it, then the method like any other, the node's reachability
// included in the method itself (an upload is not proxied).
func (srv *Server) serveUpload(r *http.Request, rt *route, vars map[string]string, auth string) (any, *int, *apiError) {
	p := params{}
	for k, v := range r.URL.Query() {
		p[k] = v[len(v)-1]
	}
	c := &call{srv: srv, s: srv.st, r: r, auth: auth, p: p, node: vars["node"]}
	if _, err := c.checkAll("/storage/"+vars["storage"], []string{"Datastore.AllocateTemplate"}, false); err != nil {
		err.NoBody = true
		return nil, nil, err
	}
	up, err := srv.readUpload(r, p)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range vars {
		p[k] = v
	}
	c.upload = up
	return srv.handle(c, rt)
}

// newUUID returns a random RFC 4122 version 4 UUID, as PVE generates
// token secrets and SMBIOS UUIDs.
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("pve fake: cannot read random bytes: %v", err))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// withState runs f with the state locked.
func (srv *Server) withState(f func(s *state) error) error {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.st.haTick()
	return f(srv.st)
}
