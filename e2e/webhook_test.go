package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
	"github.com/pxsubstrate/pxsubstrate/internal/sim"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pki"
)

// webhook is the admission webhook of a controller under test: its serving
// certificate, its package values and the flags that turn it on.
type webhook struct {
	addr string
	ca   *x509.CertPool
	args []string
}

func newWebhook(t *testing.T, cl controllertest.Cluster) *webhook {
	t.Helper()
	dir := t.TempDir()
	ca := pki.New(t, "webhook-ca")
	cert, key := ca.Issue("proxmox-network-controller-webhook", pki.Leaf{EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: []string{"localhost"}, IPs: pki.Loopback})
	values := fmt.Sprintf("zones:\n  - name: %s\n    bridge: %s\n", cl.Zone, cl.Bridge)
	for name, data := range map[string][]byte{"tls.crt": cert, "tls.key": key, "values.yaml": []byte(values)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := controllertest.FreeAddr(t)
	port := addr[strings.LastIndex(addr, ":")+1:]
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	return &webhook{addr: "127.0.0.1:" + port, ca: pool, args: []string{
		"--webhook-port=" + port, "--webhook-cert-dir=" + dir, "--admission-config=" + filepath.Join(dir, "values.yaml"),
	}}
}

// check sends two ProxmoxMachines of the tenant to the webhook over TLS:
// one on the tenant's own network (admitted) and one on a VLAN of the zone
// the tenant does not own (refused).
func (w *webhook) check(t *testing.T, c client.Client, cl controllertest.Cluster) {
	t.Helper()
	n, err := network(context.Background(), c, cl, cl.NetworkName(1))
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: cl.Tenant}, ns); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ns.Annotations[v1alpha1.AnnotationNamespaceNetworks], fmt.Sprintf("%s/%d/%s", cl.Bridge, n.Status.VLAN, n.Name)) {
		t.Fatalf("namespace %s annotation %q does not list network %s", cl.Tenant, ns.Annotations[v1alpha1.AnnotationNamespaceNetworks], n.Name)
	}
	cases := map[string]struct {
		vlan    int
		allowed bool
	}{
		"OwnNetwork":  {vlan: int(n.Status.VLAN), allowed: true},
		"ForeignVLAN": {vlan: 2000, allowed: false},
	}
	for name, tc := range cases {
		m := sim.Machine(cl.Tenant, "vm-"+strings.ToLower(name), "v1alpha1", cl.Bridge, tc.vlan, n.Name)
		resp := w.review(t, m.Object, cl.Tenant)
		if resp.Allowed != tc.allowed {
			t.Errorf("webhook, %s: allowed %v, want %v (%+v)", name, resp.Allowed, tc.allowed, resp.Result)
		}
		if !tc.allowed && (resp.Result == nil || !strings.Contains(resp.Result.Message, "must use a Proxmox network of this namespace")) {
			t.Errorf("webhook, %s: refusal %+v does not say why", name, resp.Result)
		}
	}
}

func (w *webhook) review(t *testing.T, obj map[string]any, ns string) *admissionv1.AdmissionResponse {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "1",
			Kind:      metav1.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1alpha1", Kind: "ProxmoxMachine"},
			Operation: admissionv1.Create, Namespace: ns, Object: runtime.RawExtension{Raw: raw},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: w.ca, MinVersion: tls.VersionTLS12}}}
	resp, err := hc.Post("https://"+w.addr+controller.WebhookPath, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("cannot reach the webhook: %v", err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil {
		t.Fatalf("webhook answered %s with no review: %v", resp.Status, err)
	}
	return out.Response
}
