package pvefake_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

func TestParseAuthHeader(t *testing.T) {
	type want struct {
		value string
		ok    bool
	}
	cases := map[string]struct {
		reason string
		header string
		want   want
	}{
		"Equals":         {reason: "the documented form", header: "PVEAPIToken=u@pve!t=s3cret", want: want{"u@pve!t=s3cret", true}},
		"Space":          {reason: "a space may separate the key", header: "PVEAPIToken u@pve!t=s", want: want{"u@pve!t=s", true}},
		"Escaped":        {reason: "the value is URI-unescaped", header: "PVEAPIToken=u%40pve%21t=a%3Db", want: want{"u@pve!t=a=b", true}},
		"PlusKept":       {reason: "uri_unescape leaves '+' alone", header: "PVEAPIToken=u@pve!t=a+b", want: want{"u@pve!t=a+b", true}},
		"Semicolon":      {reason: "the value ends at ';'", header: "PVEAPIToken=u@pve!t=s; other=1", want: want{"u@pve!t=s", true}},
		"AfterSpace":     {reason: "the key may follow whitespace", header: "Foo bar\tPVEAPIToken=x=y", want: want{"x=y", true}},
		"GluedPrefix":    {reason: "the key must start the header or follow whitespace", header: "XPVEAPIToken=x=y"},
		"NoSeparator":    {reason: "the key needs '=' or a space after it", header: "PVEAPITokenx=y"},
		"EmptyValue":     {reason: "an empty value is no token", header: "PVEAPIToken=;x"},
		"Bearer":         {reason: "other schemes are not tokens", header: "Bearer abc"},
		"Empty":          {reason: "no header", header: ""},
		"SecondOccasion": {reason: "a later valid occurrence counts", header: "XPVEAPIToken=a PVEAPIToken=b", want: want{"b", true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v, ok := pvefake.ParseAuthHeader(tc.header)
			if diff := cmp.Diff(tc.want, want{v, ok}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s: ParseAuthHeader(%q): -want +got:\n%s", tc.reason, tc.header, diff)
			}
		})
	}
}

func TestSplitTokenValue(t *testing.T) {
	cases := map[string]struct {
		reason    string
		value     string
		id, sec   string
		splitable bool
	}{
		"LastEquals": {reason: "verify_token splits at the last '='", value: "u@pve!t=a=b", id: "u@pve!t=a", sec: "b", splitable: true},
		"Simple":     {reason: "id and secret", value: "u@pve!t=uuid", id: "u@pve!t", sec: "uuid", splitable: true},
		"NoEquals":   {reason: "no secret", value: "u@pve!t"},
		"Newline":    {reason: "'.' does not match a line break", value: "u@pve!t=a\nb"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			id, sec, ok := pvefake.SplitTokenValue(tc.value)
			if id != tc.id || sec != tc.sec || ok != tc.splitable {
				t.Errorf("%s: SplitTokenValue(%q) = %q, %q, %v", tc.reason, tc.value, id, sec, ok)
			}
		})
	}
}

func TestAuthentication(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	srv, _ := start(t, pvefake.WithClock(func() time.Time { return now }))
	must(t, srv.AddUser("off@pve", pvefake.UserSpec{Disabled: true}))
	offSecret, err := srv.AddToken("off@pve", "tk", pvefake.TokenSpec{})
	must(t, err)
	must(t, srv.AddUser("u@pve", pvefake.UserSpec{}))
	oldSecret, err := srv.AddToken("u@pve", "old", pvefake.TokenSpec{Expire: now.Unix() - 1})
	must(t, err)
	cases := map[string]struct {
		reason string
		auth   string
		status string
		logged string
	}{
		"Valid":        {reason: "the root token authenticates", auth: rootAuth(srv), status: "200 OK"},
		"NoHeader":     {reason: "no token is 'No ticket'", auth: "", status: "401 No ticket"},
		"WrongSecret":  {reason: "a wrong secret", auth: "PVEAPIToken=" + srv.RootTokenID + "=nope", status: "401 Authentication failed!", logged: "invalid token value!"},
		"UnknownToken": {reason: "no such token", auth: "PVEAPIToken=root@pam!nope=x", status: "401 Authentication failed!", logged: "no such token 'nope' for user 'root@pam'"},
		"Disabled":     {reason: "a disabled user's tokens are refused", auth: "PVEAPIToken=off@pve!tk=" + offSecret, status: "401 Authentication failed!", logged: "user 'off@pve' is disabled"},
		"Expired":      {reason: "an expired token is refused", auth: "PVEAPIToken=u@pve!old=" + oldSecret, status: "401 Authentication failed!", logged: "token 'old' access expired"},
		"NotATokenID":  {reason: "the id must split into user and token", auth: "PVEAPIToken=root@pam=x", status: "401 Authentication failed!", logged: "'root@pam' is not a valid token ID"},
		"NoTokenID":    {reason: "no '=' at all", auth: "PVEAPIToken=abc", status: "401 Authentication failed!", logged: "no tokenid specified"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := len(srv.AuthFailures())
			status, _ := raw(t, srv, "GET", "/version", tc.auth, nil)
			if status != tc.status {
				t.Fatalf("%s: status %q, want %q", tc.reason, status, tc.status)
			}
			log := srv.AuthFailures()[before:]
			if tc.logged != "" && (len(log) != 1 || !strings.Contains(log[0], tc.logged)) {
				t.Errorf("%s: server log %q, want one line with %q", tc.reason, log, tc.logged)
			}
			for _, line := range log {
				for _, secret := range []string{srv.RootSecret, offSecret, oldSecret} {
					if strings.Contains(line, secret) {
						t.Errorf("the server log must never hold a secret: %q", line)
					}
				}
			}
		})
	}
}

func FuzzParseAuthHeader(f *testing.F) {
	f.Add("u@pve!t", "4f7a0d9e-1111-4222-8333-944444444444", "")
	f.Add("root@pam!x", "a=b;c", "Foo ")
	f.Add("", "%", "\t")
	f.Fuzz(func(t *testing.T, id, secret, prefix string) {
		value := id + "=" + secret
		header := prefix + "PVEAPIToken=" + escapeAuth(value)
		got, ok := pvefake.ParseAuthHeader(header)
		startsClean := prefix == "" || strings.ContainsAny(prefix[len(prefix)-1:], " \t\n\r\f\v")
		if startsClean && !strings.Contains(prefix, "PVEAPIToken") && (!ok || got != value) {
			t.Fatalf("ParseAuthHeader(%q) = %q, %v; want %q", header, got, ok, value)
		}
		if ok && got == "" {
			t.Fatalf("ParseAuthHeader(%q) reported an empty value as present", header)
		}
		if tid, sec, split := pvefake.SplitTokenValue(got); split && (tid+"="+sec != got || strings.Contains(sec, "=")) {
			t.Fatalf("SplitTokenValue(%q) = %q, %q: not a split at the last '='", got, tid, sec)
		}
	})
}

// escapeAuth percent-encodes what a header value cannot carry verbatim.
func escapeAuth(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ';' || c == '%' || c < 0x21 || c > 0x7e {
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
