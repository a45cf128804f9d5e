package cli

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubehypervisor"
	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

// hostileSecret is the token secret every caller sends to the hostile API.
const hostileSecret = "0b5e3f4c-hostile-secret"

// hostileAPI is an HTTPS server that answers every request as its mode
// says, and a plain HTTP listener on the same host that records whatever
// Authorization header reaches it.
type hostileAPI struct {
	tls, plain *httptest.Server
	ca         string // PEM file of tls's certificate
	mu         sync.Mutex
	leaked     []string
}

func newHostileAPI(t *testing.T, mode string) *hostileAPI {
	t.Helper()
	h := &hostileAPI{}
	h.plain = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.leaked = append(h.leaked, r.Header.Get("Authorization"))
		h.mu.Unlock()
		fmt.Fprint(w, `{"data":[]}`)
	}))
	t.Cleanup(h.plain.Close)
	h.tls = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch mode {
		case "redirect-http":
			http.Redirect(w, r, h.plain.URL+r.URL.RequestURI(), http.StatusFound)
		case "redirect-host":
			// the same port under another name: another host to the client
			port := h.tls.Listener.Addr().(*net.TCPAddr).Port
			http.Redirect(w, r, fmt.Sprintf("https://localhost:%d%s", port, r.URL.RequestURI()), http.StatusFound)
		case "endless":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":[`)
			item := strings.Repeat(`{"node":"pve","status":"online"},`, 1024)
			for r.Context().Err() == nil {
				if _, err := io.WriteString(w, item); err != nil {
					return
				}
			}
		case "huge-length":
			w.Header().Set("Content-Length", "1073741824")
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(h.tls.Close)
	h.ca = writeServerCA(t, h.tls)
	return h
}

// writeServerCA writes the certificate of a TLS test server to a PEM file
// for --ca-file and returns its path.
func writeServerCA(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (h *hostileAPI) leaks() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.leaked...)
}

// proxmoxCaller is one program of this module that builds a Proxmox
// client: it runs against url with the token id and the CA file, and
// returns what it printed and its error.
type proxmoxCaller func(t *testing.T, url, tokenID, secret, caFile string) (string, error)

// cliCaller runs a pxsubstrate command with the API flags appended.
func cliCaller(args ...string) proxmoxCaller {
	return func(t *testing.T, url, tokenID, secret, caFile string) (string, error) {
		dir := t.TempDir()
		secretFile := filepath.Join(dir, "token.secret")
		if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		full := append(append([]string{}, args...), "--url", url, "--token-id", tokenID, "--token-secret-file", secretFile, "--ca-file", caFile)
		for i, a := range full {
			full[i] = strings.ReplaceAll(a, "$DIR", dir)
		}
		for name, data := range map[string]string{"tenants.yaml": liveTenants, "zone.yaml": sdnZoneYAML} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		out, errOut, code := run(t, full...)
		// Tables wrap long messages: compare words.
		text := strings.Join(strings.Fields(out+errOut), " ")
		if code == 0 {
			return text, nil
		}
		return text, fmt.Errorf("exit %d", code)
	}
}

// controllerCaller runs the controller's zone check through a
// credentials Secret holding the same values.
func controllerCaller(t *testing.T, url, tokenID, secret, caFile string) (string, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "cozy-proxmox", Name: "pve-sdn"},
		Data: map[string][]byte{"url": []byte(url), "token_id": []byte(tokenID), "token_secret": []byte(secret), "root_ca": ca}}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(sec).Build()
	zone := &v1alpha1.ProxmoxNetworkZone{ObjectMeta: metav1.ObjectMeta{Name: "zone-a"},
		Spec: v1alpha1.ProxmoxNetworkZoneSpec{Bridge: "vmbr0", ProviderNetwork: "pn-a", VLANRanges: []string{"100-103"},
			SDN: &v1alpha1.ZoneSDN{Mode: v1alpha1.SDNModeCheck, CredentialsRef: &v1alpha1.SecretRef{Namespace: "cozy-proxmox", Name: "pve-sdn"}}}}
	rep, err := kubehypervisor.Hypervisor{Reader: c}.Check(context.Background(), zone)
	switch {
	case err != nil:
		return err.Error(), err
	case rep.Error != "":
		return rep.Error, errors.New(rep.Error)
	}
	return fmt.Sprintf("%d node(s) read with %d request(s)", len(rep.Nodes), rep.Requests), nil
}

// proxmoxCallers are every program of this module that sends a Proxmox
// VE API token: the commands and the controller.
var proxmoxCallers = map[string]proxmoxCaller{
	"acl audit":       cliCaller("acl", "audit", "--tenants", "$DIR/tenants.yaml"),
	"acl apply":       cliCaller("acl", "apply", "--tenants", "$DIR/tenants.yaml", "--dry-run"),
	"sdn check":       cliCaller("sdn", "check", "--zone", "$DIR/zone.yaml"),
	"sdn plan":        cliCaller("sdn", "plan", "--zone", "$DIR/zone.yaml"),
	"sdn apply":       cliCaller("sdn", "apply", "--zone", "$DIR/zone.yaml"),
	"sdn audit":       cliCaller("sdn", "audit", "--zone", "$DIR/zone.yaml"),
	"template select": cliCaller("template", "select", "--tags", "cozystack,talos"),
	"template create": cliCaller("template", "create", "9000", "local-lvm", "--talos-version", "v1.13.6", "--schematic-id", guestAgentID,
		"--factory-url", "https://factory.invalid"),
	"controller": controllerCaller,
}

// TestProxmoxClientsRefuseHostileAPIs: every caller, through pveapi.New,
// follows no redirect to plain HTTP or another host (the token never
// reaches the plain listener), stops reading an endless or oversized
// answer at the cap, and shows a secret pasted into the token id
// redacted. The control, each caller against the same server with the
// redirect, reaches the server and is refused by its answer, not by
// the client.
func TestProxmoxClientsRefuseHostileAPIs(t *testing.T) {
	const tokenID = "root@pam!pxsubstrate"
	for name, call := range proxmoxCallers {
		t.Run(name, func(t *testing.T) {
			for _, mode := range []string{"redirect-http", "redirect-host"} {
				h := newHostileAPI(t, mode)
				out, err := call(t, h.tls.URL, tokenID, hostileSecret, h.ca)
				if err == nil || !strings.Contains(out, "redirect") || !strings.Contains(out, "the API token is not sent there") {
					t.Errorf("%s: a redirect was followed or not named: %v\n%s", mode, err, out)
				}
				if leaked := h.leaks(); len(leaked) > 0 {
					t.Errorf("%s: the token reached %s: %q", mode, h.plain.URL, leaked)
				}
			}
			for _, mode := range []string{"endless", "huge-length"} {
				h := newHostileAPI(t, mode)
				out, err := call(t, h.tls.URL, tokenID, hostileSecret, h.ca)
				if err == nil || !strings.Contains(out, "is larger than 16 MiB (pveapi.MaxResponseBytes)") {
					t.Errorf("%s: the answer was not capped: %v\n%.2000s", mode, err, out)
				}
			}
			h := newHostileAPI(t, "redirect-http")
			out, err := call(t, h.tls.URL, "root@pam!pxsubstrate="+hostileSecret, hostileSecret, h.ca)
			if err == nil || strings.Contains(out, hostileSecret) || !strings.Contains(out, "root@pam!pxsubstrate=REDACTED") {
				t.Errorf("a secret in the token id: %v\n%s", err, out)
			}
		})
	}
}

// TestHostileAPIControl: against the Proxmox VE API fake, with the same
// flags, every caller reaches the API and is answered: its requests are
// counted, and nothing it prints speaks of a redirect, the cap, TLS or
// authentication. So the hostile cases above fail because of the server,
// not because a caller cannot run at all.
func TestHostileAPIControl(t *testing.T) {
	e := newLiveEnv(t)
	for name, call := range proxmoxCallers {
		t.Run(name, func(t *testing.T) {
			before := len(e.srv.Requests())
			out, err := call(t, e.bare, e.srv.RootTokenID, e.srv.RootSecret, e.ca)
			if len(e.srv.Requests()) == before {
				t.Errorf("the control sent no request: %v\n%s", err, out)
			}
			for _, bad := range []string{"redirect", "pveapi.MaxResponseBytes", "x509", "401", "authentication"} {
				if strings.Contains(out, bad) {
					t.Errorf("the control against the fake prints %q: %v\n%s", bad, err, out)
				}
			}
		})
	}
}

// TestTokenIDSecretRedacted: a secret pasted into the token id, through
// --token-id or PROXMOX_TOKEN, is never printed; the part before '=' is,
// so the operator sees which id was meant.
func TestTokenIDSecretRedacted(t *testing.T) {
	e := newLiveEnv(t)
	pasted := e.srv.RootTokenID + "=" + hostileSecret
	_, errOut, code := run(t, "acl", "audit", "--tenants", e.tenants, "--url", e.bare, "--ca-file", e.ca,
		"--token-id", pasted, "--token-secret-file", e.rootSec)
	if code == 0 || strings.Contains(errOut, hostileSecret) || !strings.Contains(errOut, e.srv.RootTokenID+"=REDACTED") {
		t.Errorf("--token-id: exit %d, stderr %q", code, errOut)
	}
	t.Setenv("PROXMOX_TOKEN", pasted)
	_, errOut, code = run(t, "sdn", "check", "--zone", "none.yaml", "--url", e.bare, "--ca-file", e.ca, "--token-secret-file", e.rootSec)
	if code == 0 || strings.Contains(errOut, hostileSecret) {
		t.Errorf("PROXMOX_TOKEN: exit %d, stderr %q", code, errOut)
	}
}

// nodeNameAPI is an HTTPS server whose cluster has one node named node
// and, on it, a storage and a template: enough of the API for every caller
// to build a path from the node's name. It records the raw path of every
// request, as it came over the wire.
type nodeNameAPI struct {
	tls  *httptest.Server
	ca   string
	mu   sync.Mutex
	seen []string
}

func newNodeNameAPI(t *testing.T, node string) *nodeNameAPI {
	t.Helper()
	h := &nodeNameAPI{}
	n, _ := json.Marshal(node)
	h.tls = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _, _ := strings.Cut(r.RequestURI, "?")
		h.mu.Lock()
		h.seen = append(h.seen, r.Method+" "+raw)
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch strings.TrimPrefix(raw, "/api2/json") {
		case "/version":
			fmt.Fprint(w, `{"data":{"version":"9.0.3","release":"9.0"}}`)
		case "/access/permissions":
			fmt.Fprint(w, `{"data":{"/":{"Sys.Audit":1,"VM.Audit":1,"Datastore.Audit":1,"Pool.Audit":1,"SDN.Audit":1},"/vms":{"VM.Audit":1}}}`)
		case "/nodes":
			fmt.Fprintf(w, `{"data":[{"node":%s,"status":"online"}]}`, n)
		case "/cluster/resources":
			fmt.Fprintf(w, `{"data":[{"type":"storage","id":"storage/x/local","node":%s,"storage":"local"},`+
				`{"type":"qemu","id":"qemu/9000","vmid":9000,"name":"t","node":%s,"template":1,"tags":"cozystack;talos"}]}`, n, n)
		case "/cluster/nextid":
			fmt.Fprint(w, `{"data":"9000"}`)
		default:
			fmt.Fprint(w, `{"data":[]}`)
		}
	}))
	t.Cleanup(h.tls.Close)
	h.ca = writeServerCA(t, h.tls)
	return h
}

func (h *nodeNameAPI) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen)
}

// TestNodeNameStaysOneSegment: a node name the API answers with ("..", or
// "../../access/users") goes into every request path as one escaped
// segment (pveapi.Path), never as dot segments that a proxy in front of
// the API would resolve to another path (GET /nodes/../../access/users/storage
// is GET /access/users/storage). The callers that build a path from a
// node must each have sent one with the escaped name: that is the
// control that the check ran, not a caller that stopped first.
func TestNodeNameStaysOneSegment(t *testing.T) {
	const tokenID = "root@pam!pxsubstrate"
	usesNode := map[string]bool{"acl audit": true, "acl apply": true, "sdn check": true, "template select": true, "template create": true, "controller": true}
	for _, node := range []string{"..", "../../access/users"} {
		escaped := "/nodes/" + pveapi.Path(node)[1:] + "/"
		for name, call := range proxmoxCallers {
			t.Run(name+"/"+node, func(t *testing.T) {
				h := newNodeNameAPI(t, node)
				out, _ := call(t, h.tls.URL, tokenID, hostileSecret, h.ca)
				reached := false
				for _, req := range h.requests() {
					for _, seg := range strings.Split(req, "/") {
						if seg == "." || seg == ".." {
							t.Errorf("the node %q made a dot segment: %s", node, req)
						}
					}
					reached = reached || strings.Contains(req, escaped)
				}
				if usesNode[name] && !reached {
					t.Errorf("no request reached a path of node %q (%s): %q\n%s", node, escaped, h.requests(), out)
				}
			})
		}
	}
}
