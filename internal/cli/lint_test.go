package cli

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

const lintSecret = "5f1c1e9a-8d8b-4a5e-9c1b-2f0e6b7a9d31"

func writeSecret(t *testing.T, data map[string]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Secret\nmetadata: {name: pve, namespace: cozy}\nstringData:\n")
	for k, v := range data {
		b.WriteString("  " + k + ": '" + v + "'\n")
	}
	p := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLintCredentials(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api2/json/version" || r.Header.Get("Authorization") != "PVEAPIToken=capmox@pve!capi="+lintSecret {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"data":{"version":"9.0.3"}}`))
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	good := writeSecret(t, map[string]string{"PROXMOX_URL": srv.URL, "PROXMOX_TOKEN": "capmox@pve!capi", "PROXMOX_SECRET": lintSecret})
	doubled := writeSecret(t, map[string]string{"PROXMOX_URL": srv.URL + "/api2/json", "PROXMOX_TOKEN": "capmox@pve!capi", "PROXMOX_SECRET": lintSecret})
	cases := map[string]struct {
		reason string
		args   []string
		code   int
		codes  []string
	}{
		"Good":        {reason: "a right Secret exits 0", args: []string{"-f", good}, codes: []string{"OK"}},
		"GoodProbe":   {reason: "the probe trusts --ca-file", args: []string{"-f", good, "--probe", "--ca-file", ca}, codes: []string{"OK", "ProbeOK"}},
		"Untrusted":   {reason: "without the CA, TLS verification fails", args: []string{"-f", good, "--probe"}, code: 1, codes: []string{"OK", "TLSUntrusted"}},
		"Doubled":     {reason: "the doubled /api2/json is named", args: []string{"-f", doubled}, code: 1, codes: []string{"DoubledAPIPath"}},
		"DoubledBoth": {reason: "lint and probe both see it", args: []string{"-f", doubled, "--probe", "--ca-file", ca}, code: 1, codes: []string{"DoubledAPIPath", "TokenRejected"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"lint", "credentials", "-o", "json"}, tc.args...)
			out, errOut, code := renderCLI(t, "", args...)
			if code != tc.code {
				t.Fatalf("%s: exit %d, want %d (stderr %q)", tc.reason, code, tc.code, errOut)
			}
			var fs []struct{ Code string }
			if err := json.Unmarshal([]byte(out), &fs); err != nil {
				t.Fatalf("%s: %v in %q", tc.reason, err, out)
			}
			var got []string
			for _, f := range fs {
				got = append(got, f.Code)
			}
			if diff := cmp.Diff(tc.codes, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
			if strings.Contains(out+errOut, lintSecret) {
				t.Errorf("%s: the secret value was printed", tc.reason)
			}
		})
	}
}

func TestLintCredentialsTable(t *testing.T) {
	p := writeSecret(t, map[string]string{"url": "https://pve:8006", "token_id": "ccm", "token_secret": lintSecret, "region": "eu"})
	out, _, code := renderCLI(t, "", "lint", "credentials", "-f", p)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{"SECRET", "cozy/pve", "MissingAPIPath", "set url to https://pve:8006/api2/json", "UserNotToken"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestLintCredentialsEmpty: a file without any Secret is an error, not a
// clean bill; the control with one Secret passes.
func TestLintCredentialsEmpty(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(empty, []byte("# nothing here\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, "lint", "credentials", "-f", empty)
	if code != 1 || !strings.Contains(errOut, "no Secret in "+empty+": nothing was checked") {
		t.Errorf("an empty file: exit %d, stderr %q", code, errOut)
	}
	good := writeSecret(t, map[string]string{"PROXMOX_URL": "https://pve:8006", "PROXMOX_TOKEN": "capmox@pve!capi", "PROXMOX_SECRET": lintSecret})
	if _, errOut, code := run(t, "lint", "credentials", "-f", good); code != 0 {
		t.Errorf("the control: exit %d, stderr %q", code, errOut)
	}
}

// TestLintImagesAndRequireDigests: the default render is refused under
// --require-digests by the fields the charts pin by tag (busybox and
// kubectl carry the charts' digests), and lint images reports those images
// unpinned; with every image pinned through --image the render passes
// and lint images passes (the control); a bad --image is a usage error.
func TestLintImagesAndRequireDigests(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(scenarios, "scenarios", "cluster-ipv4", "input.yaml")
	_, errOut, code := run(t, "render", "cluster", "-f", in, "--require-digests")
	if code != 1 || !strings.Contains(errOut, "Error: images.ccm, images.csiController, images.csiAttacher, images.csiProvisioner, images.csiResizer are not pinned by digest") {
		t.Fatalf("--require-digests refuses the tagged defaults by field: exit %d: %s", code, errOut)
	}
	out, errOut, code := run(t, "render", "cluster", "-f", in)
	if code != 0 {
		t.Fatalf("render: exit %d: %s", code, errOut)
	}
	tagged := filepath.Join(dir, "tagged.yaml")
	writeFile(t, tagged, out)
	out, errOut, code = run(t, "lint", "images", "-f", tagged, "-o", "json")
	var found []struct {
		Image  string
		Pinned bool
	}
	if code != 1 || !strings.Contains(errOut, "5 of 7 images are not pinned by digest") || json.Unmarshal([]byte(out), &found) != nil || len(found) != 7 {
		t.Fatalf("lint images reports the 5 tagged images of 7: exit %d: %s\n%s", code, errOut, out)
	}
	digest := "@sha256:" + strings.Repeat("0f", 32)
	args := []string{"render", "cluster", "-f", in, "--require-digests"}
	for _, f := range found {
		if f.Pinned {
			continue
		}
		field := map[string]string{"busybox": "busybox", "proxmox-cloud-controller-manager": "ccm", "proxmox-csi-controller": "csiController",
			"csi-attacher": "csiAttacher", "csi-provisioner": "csiProvisioner", "csi-resizer": "csiResizer"}[strings.Split(f.Image[strings.LastIndex(f.Image, "/")+1:], ":")[0]]
		args = append(args, "--image", field+"="+f.Image+digest)
	}
	out, errOut, code = run(t, args...)
	if code != 0 {
		t.Fatalf("every image pinned renders under --require-digests: exit %d: %s", code, errOut)
	}
	pinned := filepath.Join(dir, "pinned.yaml")
	writeFile(t, pinned, out)
	if out, errOut, code := run(t, "lint", "images", "-f", pinned); code != 0 || strings.Contains(out, "  no") {
		t.Fatalf("lint images passes a pinned render: exit %d: %s\n%s", code, errOut, out)
	}
	if _, errOut, code := run(t, "render", "cluster", "-f", in, "--image", "ccm"); code != 2 || !strings.Contains(errOut, "write FIELD=REF with FIELD one of ccm,") {
		t.Fatalf("--image without a value is a usage error: exit %d: %s", code, errOut)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLintImagesNotReference: a container whose image is a number, empty,
// missing, or that is not a mapping is a row naming its field as not an
// image reference, and the command exits 1, instead of passing over it
// and saying nothing was checked; the control, a pinned image beside
// them, is a pinned row.
func TestLintImagesNotReference(t *testing.T) {
	digest := "ghcr.io/org/app:v1@sha256:" + strings.Repeat("0f", 32)
	deployment := func(name, containers string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name + ", namespace: ns}\nspec:\n  template:\n    spec:\n      containers: " + containers + "\n"
	}
	dir := writeFiles(t, map[string]string{
		"pinned.yaml": deployment("ok", "[{name: app, image: '"+digest+"'}]"),
		"bad.yaml": deployment("number", "[{name: app, image: 5}]") + "---\n" + deployment("empty", `[{name: app, image: ""}]`) + "---\n" +
			deployment("missing", "[{name: app}]") + "---\n" + deployment("scalar", "[7]") + "---\n" + deployment("ok", "[{name: app, image: '"+digest+"'}]"),
	})
	if out, errOut, code := run(t, "lint", "images", "-f", filepath.Join(dir, "pinned.yaml")); code != 0 || !strings.Contains(out, "yes") {
		t.Fatalf("the control: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code := run(t, "lint", "images", "-f", filepath.Join(dir, "bad.yaml"), "-o", "json")
	var found []capmoxrender.ImageFinding
	if err := json.Unmarshal([]byte(out), &found); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := map[string]string{
		"Deployment ns/number":  "spec.template.spec.containers[0].image is a number 5, not an image reference: write it as a string, name:tag@sha256:<64 hex>",
		"Deployment ns/empty":   "spec.template.spec.containers[0].image is empty: a container needs an image reference, name:tag@sha256:<64 hex>",
		"Deployment ns/missing": "spec.template.spec.containers[0].image is missing: a container needs an image reference, name:tag@sha256:<64 hex>",
		"Deployment ns/scalar":  "spec.template.spec.containers[0] is a number 7, not a container: a container is a mapping with a name and an image",
		"Deployment ns/ok":      "",
	}
	got := map[string]string{}
	for _, f := range found {
		got[f.Object] = f.Problem
		if f.Pinned == (f.Problem != "") || f.NotReference != (f.Problem != "") {
			t.Errorf("%+v: pinned %v and notReference %v disagree with the problem", f, f.Pinned, f.NotReference)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems by object (-want +got):\n%s", diff)
	}
	if wantErr := "Error: 4 of 5 containers have no image reference and 0 are not pinned by digest: see each row\n"; code != 1 || errOut != wantErr {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, wantErr)
	}
}
