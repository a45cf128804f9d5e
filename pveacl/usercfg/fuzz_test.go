package usercfg

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// fuzzSeeds are user.cfg files with tokens of both kinds, groups, nested
// pools, a VM listed twice, custom roles and entries of every subject kind.
var fuzzSeeds = []string{`user:ops@pve:1:1767225600:Ops:Team:ops@example.com:on call%3A 24/7::
token:ops@pve!ro:0:1:read only:
token:ops@pve!rw:0:0::
group:oncall:ops@pve,nobody@pam:
role:Reader:VM.Audit;Datastore.Audit Sys.Audit:
acl:1:/nodes:@oncall:Reader:
acl:0:/vms/100:ops@pve!ro:Reader:
acl:1:/storage/s1:ops@pve!rw:PVEDatastoreUser:
`, `user:u@pve:1:
pool:p::100,101:s1:
pool:p/q::101,102:s1,s2:
acl:0:/pool/p:u@pve:PVEVMUser:
acl:1:/pool/p/q:u@pve:NoAccess:
`}

// Parsing, writing and parsing again gives the same configuration, so the
// second write equals the first: the canonical form is a fixed point.
func FuzzUserCfg(f *testing.F) {
	f.Add([]byte(canonicalCfg))
	for _, seed := range fuzzSeeds {
		f.Add([]byte(seed))
	}
	f.Add([]byte("user:a@pve:1:0:%ZZ%c3:%20x%20: e : c%3a :0:\ntoken:a@pve!tk:x:1:\n"))
	f.Add([]byte("pool:0::100:s1:\npool:-x::100::\nacl:1:/pool/0:a@pve:NoAccess:\n"))
	f.Add([]byte("group:g:a@pve\x00b@pve:\nrole:R:VM.Audit\x00Sys.Audit:\nacl:0:/:@g:R\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _ := Parse(data, pveacl.PVE9)
		first := Marshal(cfg)
		again, rep := Parse(first, pveacl.PVE9)
		warnings := rep.Warnings
		second := Marshal(again)
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

// FuzzParseBounded: whatever the input, Parse keeps at most MaxWarnings
// warnings and counts the rest, no warning carries a control character, a
// newline or a byte that is not UTF-8, and Report.Err refuses exactly the
// files with text but no user.cfg line.
func FuzzParseBounded(f *testing.F) {
	f.Add([]byte(canonicalCfg))
	f.Add([]byte("\x1b]0;x\x07\n\x9b2J\xff\nuser:a@pve:1:0:\x1b[1m::::\n"))
	f.Add(bytes.Repeat([]byte("junk\x1b\n"), 50))
	f.Add([]byte(" \n\t\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, rep := Parse(data, pveacl.PVE9)
		if len(rep.Warnings) > MaxWarnings || (rep.More > 0 && len(rep.Warnings) != MaxWarnings) {
			t.Fatalf("%d warnings kept and %d counted", len(rep.Warnings), rep.More)
		}
		for _, w := range rep.Warnings {
			if s := w.String(); !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }) {
				t.Fatalf("a raw control character in %q", s)
			}
		}
		refused := rep.Err("f", data) != nil
		if want := rep.Lines == 0 && strings.Trim(string(data), " \t\n\v\f\r") != ""; refused != want {
			t.Fatalf("refused %v with %d user.cfg lines of %q", refused, rep.Lines, data)
		}
	})
}
