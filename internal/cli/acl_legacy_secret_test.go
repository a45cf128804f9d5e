package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestACLApplyLegacySecretName: a secrets directory written by an earlier
// version, with alpha's csi token under its former name, stops apply before
// its first change naming that file and the name to rename it to, instead
// of creating a second secret of the token beside it.
func TestACLApplyLegacySecretName(t *testing.T) {
	e := newLiveEnv(t)
	secrets := filepath.Join(e.dir, "s")
	if err := os.MkdirAll(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(secrets, "proxmox-alpha-pve-csi.json")
	body := `{"url": "u", "token_id": "alpha@pve!csi", "token_secret": "kept", "region": "pve"}` + "\n"
	if err := os.WriteFile(old, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := runApply(t, "table", e.args("--ca-file", e.ca, "--secrets-dir", secrets)...)
	if err == nil || !strings.Contains(err.Error(), old) || !strings.Contains(err.Error(), "rename it to "+filepath.Join(secrets, "proxmox-alpha-40pve-21csi.json")) {
		t.Errorf("apply recognises the secret under its former name: %v", err)
	}
	if m := e.srv.MutatingRequests(); len(m) != 0 {
		t.Errorf("the refused apply changes nothing: %v", m)
	}
	if err := os.Rename(old, filepath.Join(secrets, "proxmox-alpha-40pve-21csi.json")); err != nil {
		t.Fatal(err)
	}
	_, _, err = runApply(t, "table", e.args("--ca-file", e.ca, "--secrets-dir", secrets)...)
	if err == nil || !strings.Contains(err.Error(), "move it away") {
		t.Errorf("renamed, it is the token's stored secret, which apply never replaces: %v", err)
	}
}
