package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlainHTTPRefused: a command that sends an API token refuses an
// http:// --url unless --allow-plain-http is given, and then warns; the
// https control reaches the API.
func TestPlainHTTPRefused(t *testing.T) {
	e := newLiveEnv(t)
	plain := "http://" + strings.TrimPrefix(e.srv.URL, "https://")
	token := []string{"--token-id", e.srv.RootTokenID, "--token-secret-file", e.rootSec}
	for _, cmd := range [][]string{{"acl", "audit", "--tenants", e.tenants}, {"template", "select", "--tags", "cozystack,talos"}} {
		t.Run(cmd[0]+"/"+cmd[1], func(t *testing.T) {
			args := append(append(append([]string{}, cmd...), "--url", plain), token...)
			_, errOut, code := run(t, args...)
			if code != 2 || !strings.Contains(errOut, "is plain HTTP: the API token would cross the network unencrypted") {
				t.Errorf("http:// --url: exit %d, stderr %q", code, errOut)
			}
			_, errOut, _ = run(t, append(args, "--allow-plain-http")...)
			if !strings.Contains(errOut, "Warning: --allow-plain-http: the API token goes to "+plain) || strings.Contains(errOut, "is plain HTTP") {
				t.Errorf("--allow-plain-http: stderr %q", errOut)
			}
			// The control: https with the CA reaches the API.
			args = append(append(append([]string{}, cmd...), "--url", e.srv.URL, "--ca-file", e.ca), token...)
			if _, errOut, code := run(t, args...); code > 1 || strings.Contains(errOut, "plain HTTP") {
				t.Errorf("https --url: exit %d, stderr %q", code, errOut)
			}
		})
	}
}

// TestURLUserinfoRedacted: a password in --url never reaches a message.
func TestURLUserinfoRedacted(t *testing.T) {
	for _, raw := range []string{"https://root:hunter2@pve:8006", "https://root:hunter2@pve:8006/x?y", "htt ps://root:hunter2@pve"} {
		_, errOut, code := run(t, "acl", "audit", "--tenants", "none.yaml", "--url", raw, "--token-id", "a@pve!t", "--token-secret", "s")
		if code == 0 || strings.Contains(errOut, "hunter2") {
			t.Errorf("--url %q: exit %d, stderr %q", raw, code, errOut)
		}
	}
}

// TestControlCharactersEscaped: an input's control characters reach the
// terminal escaped, in errors and in tables; newlines and tabs, which
// tables need, and plain text pass unchanged.
func TestControlCharactersEscaped(t *testing.T) {
	name := filepath.Join(t.TempDir(), "\x1b[2Jgone\x07.yaml")
	_, errOut, code := run(t, "admission", "policies", "--config", name)
	if code != 1 || strings.ContainsAny(errOut, "\x1b\x07") || !strings.Contains(errOut, `\x1b[2Jgone\x07.yaml`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	var out bytes.Buffer
	app := &App{Out: &out, Format: "table"}
	if err := app.Print(nil, func(w io.Writer) { fmt.Fprintf(w, "A\tB\n\x9b31mx\tplain ü\n") }); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.ContainsRune(got, 0x9b) || !strings.Contains(got, `\x9b31mx`) || !strings.Contains(got, "plain ü") || strings.Count(got, "\n") != 2 {
		t.Errorf("table %q", got)
	}
}

// TestProxmoxEnv: without --url, --token-id and a secret flag, the API
// commands take PROXMOX_URL, PROXMOX_TOKEN and PROXMOX_SECRET, as capmox
// and clusterctl do; a flag wins over its variable; with neither, the
// usage error names both; the secret is never printed.
func TestProxmoxEnv(t *testing.T) {
	e := newLiveEnv(t)
	secret, err := os.ReadFile(e.rootSec)
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, "acl", "audit", "--tenants", e.tenants, "--ca-file", e.ca)
	if code != 2 || !strings.Contains(errOut, "--url https://HOST:8006 (or PROXMOX_URL)") {
		t.Errorf("no address anywhere: exit %d, stderr %q", code, errOut)
	}
	t.Setenv("PROXMOX_URL", e.srv.URL)
	t.Setenv("PROXMOX_TOKEN", e.srv.RootTokenID)
	t.Setenv("PROXMOX_SECRET", strings.TrimSpace(string(secret)))
	out, errOut, code := run(t, "acl", "audit", "--tenants", e.tenants, "--ca-file", e.ca)
	if code > 1 || strings.Contains(out+errOut, strings.TrimSpace(string(secret))) {
		t.Errorf("from the environment: exit %d, stderr %q", code, errOut)
	}
	t.Setenv("PROXMOX_URL", "https://127.0.0.1:1")
	if _, errOut, code := run(t, "acl", "audit", "--tenants", e.tenants, "--ca-file", e.ca, "--url", e.srv.URL); code > 1 {
		t.Errorf("--url over a wrong PROXMOX_URL: exit %d, stderr %q", code, errOut)
	}
}
