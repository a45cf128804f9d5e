package liveacl_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
)

func TestSecretIsRedacted(t *testing.T) {
	s := liveacl.TokenSecret{URL: "https://pve:8006", TokenID: "a@pve!csi", Secret: "4f7a0d9e-1111-4222-8333-944444444444", Region: "eu"}
	outs := []string{fmt.Sprint(s.Secret), fmt.Sprintf("%v %+v %#v %s %q %x", s, s, s, s.Secret, s.Secret, s.Secret)}
	b, err := json.Marshal(s)
	must(t, err)
	outs = append(outs, string(b))
	for _, o := range outs {
		if strings.Contains(o, "4f7a0d9e") || strings.Contains(o, "3466376130") {
			t.Errorf("a secret leaked through formatting: %q", o)
		}
	}
	if s.Secret.Reveal() != "4f7a0d9e-1111-4222-8333-944444444444" {
		t.Error("Reveal returns the value")
	}
}

func TestSecretName(t *testing.T) {
	cases := map[string]struct {
		reason string
		id     string
		want   string
	}{
		"Tenant":  {reason: "user, realm and token joined by dashes", id: "alpha@pve!csi", want: "proxmox-alpha-pve-csi"},
		"Upper":   {reason: "lower case", id: "K8s_Beta@PVE!ccm.x", want: "proxmox-k8s-beta-pve-ccm-x"},
		"Trimmed": {reason: "no trailing dash", id: "a@pve!x-", want: "proxmox-a-pve-x"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := liveacl.SecretName(tc.id); got != tc.want {
				t.Errorf("%s: SecretName(%q) = %q, want %q", tc.reason, tc.id, got, tc.want)
			}
		})
	}
}

func TestDirSink(t *testing.T) {
	sink := liveacl.DirSink{Dir: filepath.Join(t.TempDir(), "a", "b")}
	must(t, sink.Check())
	loc, err := sink.Store(liveacl.TokenSecret{URL: "https://pve:8006", TokenID: "a@pve!csi", Secret: "s3cret", Region: "eu"})
	must(t, err)
	info, err := os.Stat(loc)
	must(t, err)
	if info.Mode().Perm() != 0o600 {
		t.Errorf("the file is 0600, got %v", info.Mode().Perm())
	}
	var got map[string]string
	b, err := os.ReadFile(loc)
	must(t, err)
	must(t, json.Unmarshal(b, &got))
	want := map[string]string{"url": "https://pve:8006", "token_id": "a@pve!csi", "token_secret": "s3cret", "region": "eu"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("file content: -want +got:\n%s", diff)
	}
	entries, err := os.ReadDir(sink.Dir)
	must(t, err)
	if len(entries) != 1 {
		t.Errorf("no temporary files remain: %v", entries)
	}
	if err := (liveacl.DirSink{}).Check(); err == nil {
		t.Error("an empty directory name is refused")
	}
}

func TestManifestSink(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.yaml")
	sink := liveacl.ManifestSink{Path: path, Namespace: "tenant-alpha"}
	must(t, sink.Check())
	for _, s := range []liveacl.TokenSecret{
		{URL: "u", TokenID: "alpha@pve!csi", Secret: "one", Region: "eu", Tenant: "alpha"},
		{URL: "u", TokenID: "alpha@pve!ccm", Secret: "two", Region: "eu", Tenant: "alpha"},
		{URL: "u", TokenID: "alpha@pve!csi", Secret: "three", Region: "eu", Tenant: "alpha"},
	} {
		_, err := sink.Store(s)
		must(t, err)
	}
	b, err := os.ReadFile(path)
	must(t, err)
	docs := bytes.Split(b, []byte("---\n"))
	if len(docs) != 2 {
		t.Fatalf("two Secrets (the csi one replaced), got:\n%s", b)
	}
	var first map[string]any
	must(t, yaml.Unmarshal(docs[0], &first))
	want := map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": "proxmox-alpha-pve-ccm", "namespace": "tenant-alpha",
			"labels":      map[string]any{"app.kubernetes.io/managed-by": "pxsubstrate", "proxmox.cozystack.io/tenant": "alpha"},
			"annotations": map[string]any{"proxmox.cozystack.io/token-id": "alpha@pve!ccm"}},
		"stringData": map[string]any{"url": "u", "token_id": "alpha@pve!ccm", "token_secret": "two", "region": "eu"}}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("first manifest: -want +got:\n%s", diff)
	}
	if !strings.Contains(string(docs[1]), "token_secret: three") {
		t.Errorf("a second secret of the same token replaces the first:\n%s", docs[1])
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the manifest file is 0600: %v %v", info.Mode(), err)
	}
	must(t, os.WriteFile(path, []byte("kind: ConfigMap\n"), 0o600))
	if err := sink.Check(); err == nil || !strings.Contains(err.Error(), "is not a Secret manifest") {
		t.Errorf("a foreign file is not overwritten: %v", err)
	}
}
