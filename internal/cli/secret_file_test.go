package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretFiles: every token secret file (acl's --token-secret-file and
// verify's --proxmox-token-secret-file, read by readSecretFile) holds the
// secret on its first line. A file whose first line is empty is refused
// as such, naming the line that holds text, not called empty; a secret
// with a control character is refused before any request, naming the file
// and the byte, never the secret. The control: the same secret on the
// first line, with a CR and a comment line after it, is read and the API
// answers.
func TestSecretFiles(t *testing.T) {
	e := newLiveEnv(t)
	write := func(name, body string) string {
		p := filepath.Join(e.dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	audit := func(secretFile string) []string {
		return []string{"acl", "audit", "--tenants", e.tenants, "--url", e.bare, "--ca-file", e.ca, "--token-id", e.srv.RootTokenID, "--token-secret-file", secretFile}
	}
	ok := write("ok.secret", e.srv.RootSecret+"\r\n# the root token\n")
	before := len(e.srv.Requests())
	if _, errOut, code := run(t, audit(ok)...); code == 2 || len(e.srv.Requests()) == before || strings.Contains(errOut, "token secret") || strings.Contains(errOut, "401") {
		t.Fatalf("the control: exit %d, stderr %q", code, errOut)
	}
	cases := map[string]struct{ body, want string }{
		"FirstLineEmpty": {"\n\n  " + e.srv.RootSecret + "\n", "Error: cannot read the token secret: the first line of --token-secret-file $F is empty, and line 3 holds text: the secret must be on the first line; remove the lines before it\n"},
		"Empty":          {" \n\t\n", "Error: cannot read the token secret: --token-secret-file $F is empty: write the token secret on its first line\n"},
		"ControlByte":    {"ab\x1b[2Jcd\n", "Error: --token-secret-file $F holds the control character 0x1b at byte 3 of the secret: an API token secret is printable text (Proxmox VE's are UUIDs), and no request can carry it; write the secret alone, as Proxmox VE showed it\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := write(name+".secret", tc.body)
			before := len(e.srv.Requests())
			_, errOut, code := run(t, audit(f)...)
			if want := strings.ReplaceAll(tc.want, "$F", f); code != 1 || errOut != want {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, want)
			}
			if n := len(e.srv.Requests()) - before; n != 0 {
				t.Errorf("%d request(s) sent with a secret that was refused", n)
			}
		})
	}
	t.Run("Verify", func(t *testing.T) {
		f := write("verify.secret", "\n"+e.srv.RootSecret+"\n")
		withVerifyClients(t, nil, nil)
		args := append(verifyArgs(t), "--proxmox-url", e.bare, "--proxmox-token-id", e.srv.RootTokenID, "--proxmox-ca-file", e.ca, "--proxmox-token-secret-file", f)
		_, errOut, code := run(t, args...)
		want := "the first line of --proxmox-token-secret-file " + f + " is empty, and line 2 holds text"
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, want)
		}
	})
}
