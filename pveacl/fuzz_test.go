package pveacl_test

import (
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// A token id splits into a valid user id and a valid token name, and
// joining them gives it back; anything else is refused with PVE's message.
func FuzzTokenID(f *testing.F) {
	for _, s := range []string{"u@pve!csi", "a@b@pve!tk", "u@pve!t", "u@pve", "!x", "a!b@pve!tk", "u@p!tk", "u@pve!tk!x", "u @pve!tk"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		uid, name, err := pveacl.ParseTokenID(s)
		if err != nil {
			if pveacl.IsTokenID(s) || !strings.Contains(err.Error(), "is not a valid token ID") {
				t.Fatalf("ParseTokenID(%q) = %v but IsTokenID = %v", s, err, pveacl.IsTokenID(s))
			}
			return
		}
		if pveacl.TokenID(uid, name) != s || pveacl.ValidTokenName(name) != nil {
			t.Fatalf("ParseTokenID(%q) = %q, %q: does not join back", s, uid, name)
		}
		if !pveacl.UserIDRe.MatchString(uid) || !pveacl.ValidAuthID(s) {
			t.Fatalf("the user part %q of %q does not follow the user grammar", uid, s)
		}
		if pveacl.ValidUserID(s) {
			t.Fatalf("%q is both a token id and a user id", s)
		}
	})
}

// Normalising is idempotent, and a normalised path is absolute, has no
// empty component and only the allowed characters.
func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{"/", "//vms//100/", "vms", "0/", "0", "", "/pool/a/b/c", "/a b", "/ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := pveacl.NormalizePath(s)
		if err != nil {
			return
		}
		if again, err := pveacl.NormalizePath(n); err != nil || again != n {
			t.Fatalf("NormalizePath(%q) = %q, then %q (%v)", s, n, again, err)
		}
		if !strings.HasPrefix(n, "/") || strings.Contains(n, "//") || (n != "/" && strings.HasSuffix(n, "/")) {
			t.Fatalf("NormalizePath(%q) = %q is not normal", s, n)
		}
	})
}

// A privilege list parses to a sorted set of valid privileges whose
// comma-joined form parses to itself; invalid names are reported.
func FuzzPrivilegeList(f *testing.F) {
	for _, s := range []string{"VM.Audit", "VM.Audit, Sys.Audit;VM.Audit", "VM.Monitor", "", " ;,", "VM.Audit\x00Sys.Audit"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range []pveacl.Version{pveacl.PVE8, pveacl.PVE9} {
			privs, err := pveacl.ParsePrivileges(v, s)
			if err != nil {
				var bad []string
				for _, p := range pveacl.SplitList(s) {
					if !pveacl.ValidPrivilege(v, p) {
						bad = append(bad, p)
					}
				}
				if len(bad) == 0 {
					t.Fatalf("ParsePrivileges(%d, %q) failed on a valid list: %v", v, s, err)
				}
				return
			}
			again, err := pveacl.ParsePrivileges(v, strings.Join(privs, ","))
			if err != nil || strings.Join(again, ",") != strings.Join(privs, ",") {
				t.Fatalf("ParsePrivileges(%d, %q) = %v, re-parsed %v (%v)", v, s, privs, again, err)
			}
			if len(pveacl.NewPrivSet(privs...).Names()) != len(privs) {
				t.Fatalf("duplicates or unknown names in %v", privs)
			}
		}
	})
}
