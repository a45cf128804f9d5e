package kubehypervisor_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/kubehypervisor"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// documentedSecret returns the credentials Secret docs/pvesdn.md shows,
// parsed as kubectl would apply it.
func documentedSecret(t *testing.T) *corev1.Secret {
	t.Helper()
	page, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "pvesdn.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- file: pve-sdn-audit.yaml -->\n```yaml\n(.*?)```").FindSubmatch(page)
	if m == nil {
		t.Fatal("docs/pvesdn.md shows no pve-sdn-audit.yaml")
	}
	sec := &corev1.Secret{}
	if err := yaml.UnmarshalStrict(m[1], sec); err != nil {
		t.Fatalf("docs/pvesdn.md's pve-sdn-audit.yaml: %v", err)
	}
	return sec
}

// checkWith runs the zone check of zone-a (VLANs 100-103 on vmbr1)
// through sec, stored as the API server stores a Secret (stringData
// folded into data).
func checkWith(t *testing.T, sec *corev1.Secret) (string, error) {
	t.Helper()
	if sec.Data == nil {
		sec.Data = map[string][]byte{}
	}
	for k, v := range sec.StringData {
		sec.Data[k] = []byte(v)
	}
	sec.StringData = nil
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(sec).Build()
	zone := &v1alpha1.ProxmoxNetworkZone{ObjectMeta: metav1.ObjectMeta{Name: "zone-a"},
		Spec: v1alpha1.ProxmoxNetworkZoneSpec{Bridge: "vmbr1", ProviderNetwork: "pn-a", VLANRanges: []string{"100-103"},
			SDN: &v1alpha1.ZoneSDN{Mode: v1alpha1.SDNModeCheck,
				CredentialsRef: &v1alpha1.SecretRef{Namespace: sec.Namespace, Name: sec.Name}}}}
	rep, err := kubehypervisor.Hypervisor{Reader: c}.Check(context.Background(), zone)
	if err != nil {
		return "", err
	}
	carry := rep.CarryableSet()
	return carry.String() + " " + rep.Error, nil
}

// TestDocumentedSecret: the Secret exactly as docs/pvesdn.md shows it,
// with the fake's address, secret and private CA in its values, lets the
// check read the nodes; the same Secret with the CA under ca.crt (or
// tls.crt, or another key) is refused naming the key and root_ca, never
// read as a Secret without a CA.
func TestDocumentedSecret(t *testing.T) {
	srv := pvefake.NewServer(t, pvefake.WithTLS())
	if err := srv.SetInterface("pve", pvefake.Interface{Name: "vmbr1", Type: "bridge", Ports: "eno2", VLANAware: true, VIDs: "100-103"}); err != nil {
		t.Fatal(err)
	}
	doc := documentedSecret(t)
	if keys := strings.Join(sortedKeys(doc.StringData), ","); keys != "root_ca,token_id,token_secret,url" {
		t.Fatalf("the documented Secret has the keys %s", keys)
	}
	fill := func(sec *corev1.Secret) *corev1.Secret {
		sec.StringData["url"] = strings.TrimSuffix(srv.URL, "/api2/json")
		sec.StringData["token_id"], sec.StringData["token_secret"] = srv.RootTokenID, srv.RootSecret
		sec.StringData["root_ca"] = string(srv.CertificatePEM())
		return sec
	}
	got, err := checkWith(t, fill(documentedSecret(t)))
	if err != nil || got != "100-103 " {
		t.Fatalf("the documented Secret: carryable %q, %v", got, err)
	}
	for _, key := range []string{"ca.crt", "tls.crt"} {
		sec := fill(documentedSecret(t))
		sec.StringData[key] = sec.StringData["root_ca"]
		delete(sec.StringData, "root_ca")
		_, err := checkWith(t, sec)
		if err == nil || !strings.Contains(err.Error(), "key "+key+" is not read: the CA certificate of the Proxmox VE API goes in key root_ca") {
			t.Errorf("the CA under %s: %v", key, err)
		}
	}
	sec := fill(documentedSecret(t))
	sec.StringData["insecure"] = "true"
	if _, err := checkWith(t, sec); err == nil || !strings.Contains(err.Error(), `key "insecure" is not read: remove it`) {
		t.Errorf("an unknown key: %v", err)
	}
	sec = fill(documentedSecret(t))
	sec.StringData["region"] = "eu-west"
	if got, err := checkWith(t, sec); err != nil || got != "100-103 " {
		t.Errorf("acl apply's region key: carryable %q, %v", got, err)
	}
	sec = fill(documentedSecret(t))
	sec.StringData["url"] = "http://" + strings.TrimPrefix(sec.StringData["url"], "https://")
	if _, err := checkWith(t, sec); err == nil || !strings.Contains(err.Error(), "is plain HTTP") {
		t.Errorf("an http:// url: %v", err)
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
