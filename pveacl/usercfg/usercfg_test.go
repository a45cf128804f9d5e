package usercfg

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
)

// canonicalCfg is a canonical user.cfg with every kind of line, free text
// that needs escaping, a nested pool and a group member and an ACL member
// that do not exist; package liveacl's tests read it too.
var canonicalCfg = func() string {
	b, err := os.ReadFile("testdata/canonical.cfg")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func TestCanonicalFileIsAFixedPoint(t *testing.T) {
	cfg, rep := Parse([]byte(canonicalCfg), pveacl.PVE9)
	warnings := rep.Warnings
	if len(warnings) != 2 || !strings.Contains(warnings[0].Msg, "ignore invalid group member 'ghost@pve'") ||
		!strings.Contains(warnings[1].Msg, "ignore invalid acl member 'ghost@pve'") || warnings[1].Line != 21 {
		t.Errorf("warnings = %v, want the missing group member and ACL member (kept all the same)", warnings)
	}
	if diff := cmp.Diff(canonicalCfg, string(Marshal(cfg))); diff != "" {
		t.Errorf("writing a parsed canonical file must reproduce it byte for byte: -want +got:\n%s", diff)
	}
	u := cfg.Users["alpha@pve"]
	if u.Firstname != "Ann:Marie" || u.Lastname != "Müller" || u.Comment != "tenant alpha%" {
		t.Errorf("free text must be percent-decoded, got %q %q %q", u.Firstname, u.Lastname, u.Comment)
	}
	if got := cfg.Groups["admins"].Comment; got != "the\nadmins" {
		t.Errorf("group comment = %q", got)
	}
	if _, ok := cfg.Pools["alpha/sub"]; !ok {
		t.Error("nested pool missing")
	}
}

func TestParseQuirks(t *testing.T) {
	type want struct {
		users    map[string]pveacl.User
		pools    map[string]pveacl.Pool
		acl      map[pveacl.ACLKey]bool
		warnings []string
	}
	root := pveacl.User{Enable: true}
	cases := map[string]struct {
		reason string
		in     string
		want   want
	}{
		"EmptyPrivsepIsZero": {
			reason: "a missing or empty privsep field means 0, and fields are trimmed",
			in:     "user:a@pve:1:\ntoken:a@pve!tk1:\ntoken: a@pve!tk2 : : 1 :\n",
			want: want{users: map[string]pveacl.User{"root@pam": root, "a@pve": {Enable: true,
				Tokens: map[string]pveacl.Token{"tk1": {}, "tk2": {Privsep: true}}}}},
		},
		"TokenBeforeUser": {
			reason: "a token line counts only after its user's line",
			in:     "token:a@pve!tk1::1:\nuser:a@pve:1:\n",
			want: want{users: map[string]pveacl.User{"root@pam": root, "a@pve": {Enable: true, Tokens: map[string]pveacl.Token{}}},
				warnings: []string{"user config - ignore token 'a@pve!tk1' - user does not exist"}},
		},
		"RepeatedUserDropsTokens": {
			reason: "a second line for a user replaces it, tokens included",
			in:     "user:a@pve:1:\ntoken:a@pve!tk1::1:\nuser:a@pve:0:\n",
			want:   want{users: map[string]pveacl.User{"root@pam": root, "a@pve": {Tokens: map[string]pveacl.Token{}}}},
		},
		"EnableAndExpire": {
			reason: "enable is Perl-true (only '' and '0' are false); expire must be digits",
			in:     "user:a@pve:00:007:\nuser:b@pve:1:soon:\nuser:c@pve::\n",
			want: want{users: map[string]pveacl.User{"root@pam": root, "a@pve": {Enable: true, Expire: 7, Tokens: map[string]pveacl.Token{}},
				"c@pve": {Tokens: map[string]pveacl.Token{}}},
				warnings: []string{"user config - ignore user 'b@pve' - (illegal characters in expire 'soon')"}},
		},
		"DuplicateVMID": {
			reason: "a VM listed by a second pool stays in the first; the parents of a nested pool are created",
			in:     "pool:a::100,101::\npool:b/c::101;102:s1 s1:\n",
			want: want{users: map[string]pveacl.User{"root@pam": root}, pools: map[string]pveacl.Pool{
				"a": {VMs: []int{100, 101}}, "b": {}, "b/c": {VMs: []int{102}, Storages: []string{"s1"}}},
				warnings: []string{"user config - ignore duplicate vmid '101' in pool 'b/c'"}},
		},
		"InvalidPoolMembers": {
			reason: "non-numeric VM ids and malformed storage ids are skipped; deep pools are refused",
			in:     "pool:a::x1,0100:1bad,ok-1:\npool:a/b/c/d:::\n",
			want: want{users: map[string]pveacl.User{"root@pam": root}, pools: map[string]pveacl.Pool{"a": {VMs: []int{100}, Storages: []string{"ok-1"}}},
				warnings: []string{"user config - ignore invalid vmid 'x1' in pool 'a'",
					"user config - ignore invalid storage '1bad' in pool 'a'",
					"user config - ignore pool 'a/b/c/d' - invalid characters in pool name"}},
		},
		"ACLOrder": {
			reason: "ACL roles and tokens must be defined above the line; the path is normalised; the last flag wins",
			in: "user:a@pve:1:\nacl:1:/vms:a@pve!tk:R:\nacl:1:vms//100/:a@pve:R,PVEAuditor:\nrole:R:VM.Audit:\n" +
				"token:a@pve!tk::1:\nacl:1:/vms:a@pve!tk:R:\nacl:0:/vms/100:a@pve:PVEAuditor:\nacl:1:/bad path:a@pve:R:\n",
			want: want{users: map[string]pveacl.User{"root@pam": root, "a@pve": {Enable: true, Tokens: map[string]pveacl.Token{"tk": {Privsep: true}}}},
				acl: map[pveacl.ACLKey]bool{
					{Path: "/vms", Kind: pveacl.KindToken, Subject: "a@pve!tk", Role: "R"}:          true,
					{Path: "/vms/100", Kind: pveacl.KindUser, Subject: "a@pve", Role: "PVEAuditor"}: false,
				},
				warnings: []string{"user config - ignore invalid acl role 'R'", "user config - ignore invalid acl role 'R'",
					"user config - ignore invalid path in acl '/bad path'"}},
		},
		"ACLSubjects": {
			reason: "groups are @name, users are user@realm, tokens user@realm!name; unknown users and groups are kept, root@pam is not",
			in:     "acl:1:/:@nogroup,nobody@pve,root@pam,bad:PVEAuditor:\n",
			want: want{users: map[string]pveacl.User{"root@pam": root}, acl: map[pveacl.ACLKey]bool{
				{Path: "/", Kind: pveacl.KindGroup, Subject: "nogroup", Role: "PVEAuditor"}:   true,
				{Path: "/", Kind: pveacl.KindUser, Subject: "nobody@pve", Role: "PVEAuditor"}: true,
			}, warnings: []string{"user config - ignore invalid acl group 'nogroup'", "user config - ignore invalid acl member 'nobody@pve'",
				"user config - invalid user/group 'bad' in acl"}},
		},
		"UnknownLinesAndPrivileges": {
			reason: "unknown record types and privileges of another version are warned about and skipped",
			in:     "comment:x\nrole:Old:VM.Monitor,VM.Audit:\nrole:PVEAuditor:Sys.Modify:\n\n   \n",
			want: want{users: map[string]pveacl.User{"root@pam": root},
				warnings: []string{"user config - ignore config line: comment:x", "user config - ignore invalid privilege 'VM.Monitor'",
					"user config - ignore role 'PVEAuditor' - built-in roles cannot be changed"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, rep := Parse([]byte(tc.in), pveacl.PVE9)
			var msgs []string
			for _, w := range rep.Warnings {
				msgs = append(msgs, w.Msg)
			}
			opts := []cmp.Option{cmpopts.EquateEmpty()}
			if diff := cmp.Diff(tc.want.warnings, msgs, opts...); diff != "" {
				t.Errorf("%s\nwarnings: -want +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.users, cfg.Users, opts...); diff != "" {
				t.Errorf("%s\nusers: -want +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.pools, cfg.Pools, opts...); diff != "" {
				t.Errorf("%s\npools: -want +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.acl, cfg.ACL, opts...); diff != "" {
				t.Errorf("%s\nacl: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWriterOrder(t *testing.T) {
	cfg := pveacl.NewConfig(pveacl.PVE9)
	cfg.Roles["R"] = pveacl.Role{Privs: []string{"VM.Audit"}}
	for _, p := range []string{"/a-b", "/a/b", "/a", "/"} {
		cfg.ACL[pveacl.ACLKey{Path: p, Kind: pveacl.KindUser, Subject: "x@pve", Role: "R"}] = p != "/a"
	}
	cfg.ACL[pveacl.ACLKey{Path: "/a", Kind: pveacl.KindGroup, Subject: "G", Role: "R"}] = false
	cfg.ACL[pveacl.ACLKey{Path: "/a", Kind: pveacl.KindToken, Subject: "x@pve!t", Role: "PVEAuditor"}] = false
	cfg.ACL[pveacl.ACLKey{Path: "/a", Kind: pveacl.KindUser, Subject: "root@pam", Role: "R"}] = true
	want := "user:root@pam:1:0::::::\n\n\n\nrole:R:VM.Audit:\n\n" +
		"acl:1:/:x@pve:R:\n" +
		"acl:0:/a:x@pve!t:PVEAuditor:\nacl:0:/a:@G,x@pve:R:\n" +
		"acl:1:/a/b:x@pve:R:\n" +
		"acl:1:/a-b:x@pve:R:\n"
	if diff := cmp.Diff(want, string(Marshal(cfg))); diff != "" {
		t.Errorf("the ACL walks the tree depth-first with sorted children, propagate=0 first, subjects sharing a role list share a line, root@pam is never written: -want +got:\n%s", diff)
	}
}

// TestHostileFile: a file without a user.cfg line is refused by name; one
// of thousands of bad lines keeps MaxWarnings warnings, escaped onto one
// line each, and counts the rest.
func TestHostileFile(t *testing.T) {
	junk := []byte("\x1b]0;t\x07garbage\nmore:garbage\n")
	_, rep := Parse(junk, pveacl.PVE9)
	if err := rep.Err("x.cfg", junk); err == nil || !strings.HasPrefix(err.Error(), "x.cfg: not a user.cfg") {
		t.Errorf("a file of no user.cfg line: %v", err)
	}
	if _, rep := Parse([]byte("\n  \n"), pveacl.PVE9); rep.Err("empty", []byte("\n  \n")) != nil || rep.Total() != 0 {
		t.Errorf("a blank file is an empty user.cfg: %+v", rep)
	}
	in := "user:root@pam:1:0::::::\n" + strings.Repeat("bad\x1b[2J\tline\n", 5000)
	cfg, rep := Parse([]byte(in), pveacl.PVE9)
	if rep.Err("f", []byte(in)) != nil || rep.Lines != 1 || len(cfg.Users) != 1 {
		t.Errorf("one good line makes a user.cfg: %+v", rep)
	}
	if len(rep.Warnings) != MaxWarnings || rep.More != 5000-MaxWarnings || rep.Total() != 5000 {
		t.Errorf("%d warnings kept, %d counted", len(rep.Warnings), rep.More)
	}
	if w := rep.Warnings[0]; w.Line != 2 || w.Msg != `user config - ignore config line: bad\x1b[2J\x09line` {
		t.Errorf("first warning %q", w)
	}
}
