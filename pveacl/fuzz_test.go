package pveacl

import (
	"bytes"
	"strings"
	"testing"
)

// Parsing, writing and parsing again gives the same configuration, so the
// second write equals the first: the canonical form is a fixed point.
func FuzzUserCfg(f *testing.F) {
	f.Add([]byte(canonicalCfg))
	f.Add([]byte(vecTokens))
	f.Add([]byte(vecPools))
	f.Add([]byte("user:a@pve:1:0:%ZZ%c3:%20x%20: e : c%3a :0:\ntoken:a@pve!tk:x:1:\n"))
	f.Add([]byte("pool:0::100:s1:\npool:-x::100::\nacl:1:/pool/0:a@pve:NoAccess:\n"))
	f.Add([]byte("group:g:a@pve\x00b@pve:\nrole:R:VM.Audit\x00Sys.Audit:\nacl:0:/:@g:R\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _ := ParseUserCfg(data, PVE9)
		first := MarshalUserCfg(cfg)
		again, warnings := ParseUserCfg(first, PVE9)
		second := MarshalUserCfg(again)
		if !bytes.Equal(first, second) {
			t.Fatalf("not a fixed point:\nfirst:\n%s\nsecond:\n%s\nwarnings: %v", first, second, warnings)
		}
		if len(warnings) > 0 {
			for _, w := range warnings {
				if !strings.Contains(w.Msg, "ignore invalid group member") && !strings.Contains(w.Msg, "ignore invalid acl member") &&
					!strings.Contains(w.Msg, "ignore invalid acl group") {
					t.Fatalf("the canonical form must parse without loss, got %v\n%s", w, first)
				}
			}
		}
	})
}

// A token id splits into a valid user id and a valid token name, and
// joining them gives it back; anything else is refused with PVE's message.
func FuzzTokenID(f *testing.F) {
	for _, s := range []string{"u@pve!csi", "a@b@pve!tk", "u@pve!t", "u@pve", "!x", "a!b@pve!tk", "u@p!tk", "u@pve!tk!x", "u @pve!tk"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		uid, name, err := ParseTokenID(s)
		if err != nil {
			if IsTokenID(s) || !strings.Contains(err.Error(), "is not a valid token ID") {
				t.Fatalf("ParseTokenID(%q) = %v but IsTokenID = %v", s, err, IsTokenID(s))
			}
			return
		}
		if TokenID(uid, name) != s || ValidTokenName(name) != nil {
			t.Fatalf("ParseTokenID(%q) = %q, %q: does not join back", s, uid, name)
		}
		if !userIDRe.MatchString(uid) || !ValidAuthID(s) {
			t.Fatalf("the user part %q of %q does not follow the user grammar", uid, s)
		}
		if ValidUserID(s) {
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
		n, err := NormalizePath(s)
		if err != nil {
			return
		}
		if again, err := NormalizePath(n); err != nil || again != n {
			t.Fatalf("NormalizePath(%q) = %q, then %q (%v)", s, n, again, err)
		}
		if !strings.HasPrefix(n, "/") || strings.Contains(n, "//") || (n != "/" && strings.HasSuffix(n, "/")) {
			t.Fatalf("NormalizePath(%q) = %q is not normal", s, n)
		}
		if CheckPath(n) && !checkPathRe.MatchString(n) {
			t.Fatal("CheckPath disagrees with its grammar")
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
		for _, v := range []Version{PVE8, PVE9} {
			privs, err := ParsePrivileges(v, s)
			if err != nil {
				var bad []string
				for _, p := range SplitList(s) {
					if !ValidPrivilege(v, p) {
						bad = append(bad, p)
					}
				}
				if len(bad) == 0 {
					t.Fatalf("ParsePrivileges(%d, %q) failed on a valid list: %v", v, s, err)
				}
				return
			}
			again, err := ParsePrivileges(v, strings.Join(privs, ","))
			if err != nil || strings.Join(again, ",") != strings.Join(privs, ",") {
				t.Fatalf("ParsePrivileges(%d, %q) = %v, re-parsed %v (%v)", v, s, privs, again, err)
			}
			if NewPrivSet(privs...).Len() != len(privs) {
				t.Fatalf("duplicates or unknown names in %v", privs)
			}
		}
	})
}
