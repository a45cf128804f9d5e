package usercfg

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// fuzzSeeds are user.cfg files with tokens of both kinds, groups, nested
// pools, a VM listed twice, custom roles and entries of every subject kind.
var fuzzSeeds = []string{`user:a@pve:1:
user:b@pam:1:
token:a@pve!t1::1:
token:b@pam!t2::0:
group:g1:a@pve,b@pam:
role:R1:VM.PowerMgmt:
acl:1:/vms:@g1:R1:
acl:0:/vms/100:a@pve!t1:NoAccess:
acl:1:/storage:b@pam!t2:PVEDatastoreUser:
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
		again, warnings := Parse(first, pveacl.PVE9)
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
