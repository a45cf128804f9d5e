package liveacl_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
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
		"Tenant":   {reason: "'@' is -40, '!' is -21", id: "alpha@pve!csi", want: "proxmox-alpha-40pve-21csi"},
		"Dash":     {reason: "'-' is -2d, so a-b and a_b differ", id: "a-b@pve!csi", want: "proxmox-a-2db-40pve-21csi"},
		"Under":    {reason: "'_' is -5f", id: "a_b@pve!csi", want: "proxmox-a-5fb-40pve-21csi"},
		"Upper":    {reason: "an upper-case letter is its hex, so Alpha and alpha differ", id: "Alpha@pve!csi", want: "proxmox--41lpha-40pve-21csi"},
		"Lower":    {reason: "lower case stays", id: "alpha@pve!CSI", want: "proxmox-alpha-40pve-21-43-53-49"},
		"Trailing": {reason: "a trailing dash is a triple ending in a digit", id: "a@pve!x-", want: "proxmox-a-40pve-21x-2d"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := liveacl.SecretName(tc.id); got != tc.want {
				t.Errorf("%s: SecretName(%q) = %q, want %q", tc.reason, tc.id, got, tc.want)
			}
		})
	}
}

// TestSecretNameInjective decodes every name back to its token id: two
// ids never share a name, and every name is a Kubernetes object name.
func TestSecretNameInjective(t *testing.T) {
	dns := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	rapid.Check(t, func(rt *rapid.T) {
		id := rapid.StringMatching(`[A-Za-z0-9._@!-]{1,40}`).Draw(rt, "id")
		other := rapid.StringMatching(`[A-Za-z0-9._@!-]{1,40}`).Draw(rt, "other")
		name := liveacl.SecretName(id)
		if got := decodeSecretName(rt, name); got != id {
			rt.Fatalf("SecretName(%q) = %q decodes to %q", id, name, got)
		}
		if !dns.MatchString(name) {
			rt.Fatalf("SecretName(%q) = %q is not a Kubernetes name", id, name)
		}
		if other != id && liveacl.SecretName(other) == name {
			rt.Fatalf("%q and %q share the name %q", id, other, name)
		}
	})
}

func decodeSecretName(rt *rapid.T, name string) string {
	rest, ok := strings.CutPrefix(name, "proxmox-")
	if !ok {
		rt.Fatalf("%q lacks the prefix", name)
	}
	var out []byte
	for i := 0; i < len(rest); i++ {
		if rest[i] != '-' {
			out = append(out, rest[i])
			continue
		}
		b, err := hex.DecodeString(rest[i+1 : i+3])
		if err != nil {
			rt.Fatalf("%q: %v", name, err)
		}
		out = append(out, b...)
		i += 2
	}
	return string(out)
}

func TestDirSink(t *testing.T) {
	sink := liveacl.DirSink{Dir: filepath.Join(t.TempDir(), "a", "b")}
	must(t, sink.Check([]string{"a@pve!csi"}))
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
	if err := (liveacl.DirSink{}).Check(nil); err == nil {
		t.Error("an empty directory name is refused")
	}
}

// TestSinksKeepStoredSecrets: a secret already stored is never replaced;
// Check names the file before any token is created, Store refuses too, and
// the file keeps the first secret. Another token is admitted.
func TestSinksKeepStoredSecrets(t *testing.T) {
	dir := t.TempDir()
	sinks := map[string]liveacl.SecretSink{"Dir": liveacl.DirSink{Dir: filepath.Join(dir, "d")},
		"Manifest": liveacl.ManifestSink{Path: filepath.Join(dir, "m.yaml")}}
	for name, sink := range sinks {
		t.Run(name, func(t *testing.T) {
			first := liveacl.TokenSecret{TokenID: "a-b@pve!csi", Secret: "first"}
			must(t, sink.Check([]string{first.TokenID}))
			loc, err := sink.Store(first)
			must(t, err)
			err = sink.Check([]string{"a_b@pve!csi", "a-b@pve!csi"})
			if !errors.Is(err, liveacl.ErrSecretExists) || !strings.Contains(err.Error(), "a-b@pve!csi") || !strings.Contains(err.Error(), loc) ||
				!strings.Contains(err.Error(), "move it away") {
				t.Errorf("Check refuses a token whose secret is stored, naming the token, %s and what to do: %v", loc, err)
			}
			if _, err := sink.Store(liveacl.TokenSecret{TokenID: "a-b@pve!csi", Secret: "second"}); !errors.Is(err, liveacl.ErrSecretExists) {
				t.Errorf("Store refuses to replace a stored secret: %v", err)
			}
			file, _, _ := strings.Cut(loc, "#")
			if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), "first") || strings.Contains(string(b), "second") {
				t.Errorf("%s keeps the first secret: %v\n%s", file, err, b)
			}
			// Control: the token of a_b, whose name folds like a-b's, has its own place.
			must(t, sink.Check([]string{"a_b@pve!csi"}))
			other, err := sink.Store(liveacl.TokenSecret{TokenID: "a_b@pve!csi", Secret: "third"})
			must(t, err)
			if other == loc {
				t.Errorf("a_b's secret went where a-b's is: %s", other)
			}
		})
	}
}

func TestManifestSink(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.yaml")
	sink := liveacl.ManifestSink{Path: path, Namespace: "tenant-alpha"}
	must(t, sink.Check([]string{"alpha@pve!csi", "alpha@pve!ccm"}))
	for _, s := range []liveacl.TokenSecret{
		{URL: "u", TokenID: "alpha@pve!csi", Secret: "one", Region: "eu", Tenant: "alpha"},
		{URL: "u", TokenID: "alpha@pve!ccm", Secret: "two", Region: "eu", Tenant: "alpha"},
	} {
		_, err := sink.Store(s)
		must(t, err)
	}
	b, err := os.ReadFile(path)
	must(t, err)
	docs := bytes.Split(b, []byte("---\n"))
	if len(docs) != 2 {
		t.Fatalf("two Secrets, got:\n%s", b)
	}
	var first map[string]any
	must(t, yaml.Unmarshal(docs[0], &first))
	want := map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": "proxmox-alpha-40pve-21ccm", "namespace": "tenant-alpha",
			"labels":      map[string]any{"app.kubernetes.io/managed-by": "pxsubstrate", "proxmox.cozystack.io/tenant": "alpha"},
			"annotations": map[string]any{"proxmox.cozystack.io/token-id": "alpha@pve!ccm"}},
		"stringData": map[string]any{"url": "u", "token_id": "alpha@pve!ccm", "token_secret": "two", "region": "eu"}}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("first manifest: -want +got:\n%s", diff)
	}
	if !strings.Contains(string(docs[1]), "token_secret: one") {
		t.Errorf("the second Secret is the csi token's:\n%s", docs[1])
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the manifest file is 0600: %v %v", info.Mode(), err)
	}
	must(t, os.WriteFile(path, []byte("kind: ConfigMap\n"), 0o600))
	if err := sink.Check(nil); err == nil || !strings.Contains(err.Error(), "is not a Secret manifest") {
		t.Errorf("a foreign file is not overwritten: %v", err)
	}
}

// TestManifestSinkMatchesCase: a Secret manifest read back from the file
// with a key in another case than the sink writes is refused by its path,
// alone or next to the right one (which would otherwise keep one of the
// two values without a word); the file as the sink wrote it is admitted.
func TestManifestSinkMatchesCase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.yaml")
	sink := liveacl.ManifestSink{Path: path, Namespace: "tenant-alpha"}
	_, err := sink.Store(liveacl.TokenSecret{URL: "u", TokenID: "alpha@pve!csi", Secret: "one", Region: "eu", Tenant: "alpha"})
	must(t, err)
	written, err := os.ReadFile(path)
	must(t, err)
	must(t, sink.Check(nil))
	cases := map[string]struct{ from, to, want string }{
		"Miscased":  {"stringData:", "StringData:", `unknown field "StringData"; did you mean "stringData"?`},
		"BothCases": {"  name: proxmox-alpha-40pve-21csi\n", "  name: proxmox-alpha-40pve-21csi\n  Name: proxmox-other\n", `unknown field "metadata.Name"; did you mean "name"?`},
		"Duplicate": {"type: Opaque\n", "type: Opaque\ntype: Other\n", `key "type" already set`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := strings.Replace(string(written), tc.from, tc.to, 1)
			if in == string(written) {
				t.Fatalf("the edit %q did not apply to:\n%s", tc.from, written)
			}
			must(t, os.WriteFile(path, []byte(in), 0o600))
			err := sink.Check(nil)
			if err == nil || !strings.Contains(err.Error(), "is not a Secret manifest") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want a refusal naming %s", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "token_secret: one") {
				t.Errorf("the refusal carries the secret: %v", err)
			}
		})
	}
}

// TestLegacySecretNames: a secret stored by an earlier version, under the
// name it used then (proxmox-a-b-pve-csi for a-b@pve!csi), is recognised
// as the token's: neither sink stores a second secret of that token beside
// it, and the refusal names both names. A file under that name holding
// another token's id (a_b@pve!csi folded to the same name) is not in the
// way; an unreadable one is, as it may be the token's.
func TestLegacySecretNames(t *testing.T) {
	old := map[string]string{"url": "u", "token_id": "a-b@pve!csi", "token_secret": "kept", "region": "eu"}
	dir := t.TempDir()
	body, err := json.Marshal(old)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "proxmox-a-b-pve-csi.json"), body, 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "proxmox-c-pve-csi.json"), []byte("not json"), 0o600))
	manifests := filepath.Join(t.TempDir(), "m.yaml")
	doc, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": "proxmox-a-b-pve-csi"}, "stringData": old})
	must(t, err)
	must(t, os.WriteFile(manifests, doc, 0o600))
	sinks := map[string]struct {
		sink     liveacl.SecretSink
		old, now string
	}{
		"Dir":      {liveacl.DirSink{Dir: dir}, filepath.Join(dir, "proxmox-a-b-pve-csi.json"), filepath.Join(dir, "proxmox-a-2db-40pve-21csi.json")},
		"Manifest": {liveacl.ManifestSink{Path: manifests}, manifests + "#proxmox-a-b-pve-csi", manifests + "#proxmox-a-2db-40pve-21csi"},
	}
	for name, tc := range sinks {
		t.Run(name, func(t *testing.T) {
			err := tc.sink.Check([]string{"a-b@pve!csi"})
			if !errors.Is(err, liveacl.ErrSecretExists) || !strings.Contains(err.Error(), tc.old) || !strings.Contains(err.Error(), "rename it to "+tc.now) {
				t.Errorf("Check recognises the token's secret under its former name and says how to move it: %v", err)
			}
			if _, err := tc.sink.Store(liveacl.TokenSecret{TokenID: "a-b@pve!csi", Secret: "second"}); !errors.Is(err, liveacl.ErrSecretExists) {
				t.Errorf("Store refuses a second secret beside the former one: %v", err)
			}
			must(t, tc.sink.Check([]string{"a_b@pve!csi"}))
			if _, err := tc.sink.Store(liveacl.TokenSecret{TokenID: "a_b@pve!csi", Secret: "other"}); err != nil {
				t.Errorf("another token whose former name folds the same is not in the way: %v", err)
			}
		})
	}
	if err := (liveacl.DirSink{Dir: dir}).Check([]string{"c@pve!csi"}); !errors.Is(err, liveacl.ErrSecretExists) {
		t.Errorf("an unreadable file under the token's former name may be its secret: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "proxmox-a-b-pve-csi.json")); err != nil || !strings.Contains(string(b), "kept") {
		t.Errorf("the former file is kept as it was: %v %s", err, b)
	}
}

// TestManifestSinkReadsEveryDocument: a Secret manifest the file holds
// after a document end marker, or a syntax error in a later document, is
// refused by its document, so that no manifest is dropped when the file is
// written again; empty documents are passed over.
func TestManifestSinkReadsEveryDocument(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.yaml")
	sink := liveacl.ManifestSink{Path: path, Namespace: "tenant-alpha"}
	_, err := sink.Store(liveacl.TokenSecret{URL: "u", TokenID: "alpha@pve!csi", Secret: "one", Region: "eu", Tenant: "alpha"})
	must(t, err)
	written, err := os.ReadFile(path)
	must(t, err)
	must(t, os.WriteFile(path, append([]byte("---\n---\n"), written...), 0o600))
	must(t, sink.Check(nil))
	for name, in := range map[string]string{
		"AfterEnd":       string(written) + "...\nkind: Secret\nmetadata: {name: other}\n",
		"SyntaxInSecond": string(written) + "---\nkind: Secret\n metadata: {name: other}\n",
	} {
		must(t, os.WriteFile(path, []byte(in), 0o600))
		if err := sink.Check(nil); err == nil || !strings.Contains(err.Error(), "document 2 is not a Secret manifest this tool wrote (yaml: line") {
			t.Errorf("%s: Check = %v, want a refusal of document 2 naming its line", name, err)
		}
	}
}

// TestManifestSinkBounded: a --secret-manifests file larger than
// MaxManifestsBytes (or a device that never ends) is refused by its path
// before it is read whole; a manifest file of normal size is read (the
// control: the sink checks it and finds no clash).
func TestManifestSinkBounded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secrets.yaml")
	sink := liveacl.ManifestSink{Path: path, Namespace: "tenant-alpha"}
	_, err := sink.Store(liveacl.TokenSecret{URL: "u", TokenID: "alpha@pve!csi", Secret: "one", Region: "eu", Tenant: "alpha"})
	must(t, err)
	must(t, sink.Check([]string{"alpha@pve!ccm"}))

	big := filepath.Join(dir, "big.yaml")
	must(t, os.WriteFile(big, append([]byte("#"), bytes.Repeat([]byte("x"), liveacl.MaxManifestsBytes)...), 0o600))
	for _, p := range []string{big, "/dev/zero"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		err := liveacl.ManifestSink{Path: p}.Check([]string{"alpha@pve!ccm"})
		if err == nil || !strings.Contains(err.Error(), p+" is larger than 8 MiB") {
			t.Errorf("%s: %v", p, err)
		}
	}
}
