package controller_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
)

// metricsReader is the ClusterRole of config/rbac a scraper is bound to.
const metricsReader = "proxmox-network-controller-metrics-reader"

// scrapeToken creates the ServiceAccount monitoring/name, binds it to the
// metrics reader role when reader, and returns a token for it.
func scrapeToken(t *testing.T, cs kubernetes.Interface, name string, reader bool) string {
	t.Helper()
	ctx := context.Background()
	const ns = "monitoring"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if reader {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReader},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// scrape GETs https://addr/metrics with token (none when empty) and
// returns the status code and body.
func scrape(addr, token string, tlsConfig *tls.Config) (int, string, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true}}
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 1 {
		return 0, "", fmt.Errorf("the metrics server answered over %s without --enable-http2", resp.Proto)
	}
	return resp.StatusCode, string(b), err
}

// checkMetricsServer: with the defaults, /metrics answers over HTTPS
// (TLS 1.2 or newer, HTTP/1.1) only to a caller the API server
// authenticates and allows to get /metrics.
func checkMetricsServer(t *testing.T, cs kubernetes.Interface, addr string) {
	insecure := &tls.Config{InsecureSkipVerify: true} // the certificate is self-signed without --metrics-cert-dir
	reader := scrapeToken(t, cs, "prometheus", true)
	stranger := scrapeToken(t, cs, "stranger", false)
	controllertest.Eventually(t, 30*time.Second, nil, func() (bool, string) {
		code, body, err := scrape(addr, reader, insecure)
		if err != nil {
			return false, err.Error()
		}
		// The test's process registers its own metrics elsewhere; the
		// server serves controller-runtime's registry.
		return code == http.StatusOK && strings.Contains(body, "# TYPE "), fmt.Sprintf("%d: %.200s", code, body)
	})
	for name, tc := range map[string]struct {
		token string
		code  int
	}{"NoToken": {"", http.StatusUnauthorized}, "BadToken": {"not-a-token", 0}, "NotAllowed": {stranger, http.StatusForbidden}} {
		// A token the API server does not know is refused (the filter
		// answers 500 when its TokenReview fails): any 4xx or 5xx.
		if code, body, err := scrape(addr, tc.token, insecure); err != nil || (tc.code != 0 && code != tc.code) || code < 400 {
			t.Errorf("%s: scrape answered %d %q (%v), want %d", name, code, body, err, tc.code)
		}
	}
	if _, _, err := scrape(addr, reader, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11}); err == nil {
		t.Errorf("the metrics server accepted TLS 1.1")
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("the metrics server answered plain HTTP")
		}
	}
}
