package pveapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveapi"
)

// TestNewRefusals: each Config New refuses is named by the input the
// caller gave (Config.Names), and no message holds the secret; the
// control builds a client.
func TestNewRefusals(t *testing.T) {
	good := pveapi.Config{URL: "https://pve:8006", TokenID: "root@pam!tok", Secret: "s3cret"}
	cli := pveapi.Names{URL: "--url", TokenID: "--token-id", CA: "--ca-file", Insecure: "--insecure-skip-tls-verify"}
	cases := map[string]struct {
		edit  func(*pveapi.Config)
		want  string
		plain bool
	}{
		"PlainHTTP":   {edit: func(c *pveapi.Config) { c.URL = "http://pve:8006" }, want: `--url "http://pve:8006/api2/json" is plain HTTP`, plain: true},
		"NotURL":      {edit: func(c *pveapi.Config) { c.URL = "pve" }, want: `--url "pve" is not an API address`},
		"Path":        {edit: func(c *pveapi.Config) { c.URL = "https://pve:8006/x" }, want: `has the path "/x"`},
		"TokenID":     {edit: func(c *pveapi.Config) { c.TokenID = "root@pam" }, want: `--token-id "root@pam" is not a token id`},
		"PastedToken": {edit: func(c *pveapi.Config) { c.TokenID = "root@pam!tok=s3cret" }, want: `--token-id "root@pam!tok=REDACTED" is not a token id`},
		"NoSecret":    {edit: func(c *pveapi.Config) { c.Secret = "" }, want: `the token secret of root@pam!tok is empty`},
		"SecretControl": {edit: func(c *pveapi.Config) { c.Secret = "s3cr\x07et" },
			want: `the token secret holds the control character 0x07 at byte 5 of the secret`},
		"SecretNewline": {edit: func(c *pveapi.Config) { c.Secret, c.Names.Secret = "s3cret\nother", "--token-secret-file t.secret" },
			want: `--token-secret-file t.secret holds the control character 0x0a at byte 7 of the secret`},
		"BadCA": {edit: func(c *pveapi.Config) { c.CAPEM = []byte("not pem") }, want: `--ca-file holds no PEM certificate`},
		"CAInsecure": {edit: func(c *pveapi.Config) { c.CAPEM, c.InsecureSkipVerify = []byte("x"), true },
			want: `--ca-file and --insecure-skip-tls-verify exclude each other`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := good
			cfg.Names = cli
			tc.edit(&cfg)
			c, err := pveapi.New(cfg)
			if c != nil || err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("New: %v, want an error holding %q and not the secret", err, tc.want)
			}
			if !errors.Is(err, pveapi.ErrConfig) || errors.Is(err, pveapi.ErrPlainHTTP) != tc.plain {
				t.Errorf("%v: ErrConfig %v, ErrPlainHTTP %v", err, errors.Is(err, pveapi.ErrConfig), errors.Is(err, pveapi.ErrPlainHTTP))
			}
		})
	}
	if c, err := pveapi.New(good); err != nil || c == nil {
		t.Errorf("the control: %v", err)
	}
	plain := good
	plain.URL, plain.AllowPlainHTTP = "http://127.0.0.1:8006", true
	if _, err := pveapi.New(plain); err != nil {
		t.Errorf("plain HTTP allowed: %v", err)
	}
}

// TestNewCapsAndRedirects: an answer of exactly the cap is read, one byte
// more is ErrResponseTooLarge; a redirect within the API's scheme and host
// is followed with the token, one to another port is ErrRedirect and
// carries nothing there.
func TestNewCapsAndRedirects(t *testing.T) {
	const limit = 1 << 10
	var other []string
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other = append(other, r.Header.Get("Authorization"))
		fmt.Fprint(w, `{"data":"elsewhere"}`)
	}))
	defer elsewhere.Close()
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		switch r.URL.Path {
		case "/api2/json/exact", "/api2/json/over":
			// {"data":"xxx..."} of exactly limit bytes, or one more
			n := limit - len(`{"data":""}`)
			if strings.HasSuffix(r.URL.Path, "over") {
				n++
			}
			fmt.Fprintf(w, `{"data":"%s"}`, strings.Repeat("x", n))
		case "/api2/json/moved":
			http.Redirect(w, r, "/api2/json/exact", http.StatusFound)
		case "/api2/json/away":
			http.Redirect(w, r, elsewhere.URL+"/api2/json/x", http.StatusFound)
		}
	}))
	defer srv.Close()
	c, err := pveapi.New(pveapi.Config{URL: srv.URL, TokenID: "root@pam!tok", Secret: "s3cret", AllowPlainHTTP: true, MaxResponseBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var got string
	if err := c.Get(ctx, "/exact", &got); err != nil || len(got) != limit-len(`{"data":""}`) {
		t.Errorf("an answer of exactly the cap: %d bytes, %v", len(got), err)
	}
	if err := c.Get(ctx, "/over", &got); !errors.Is(err, pveapi.ErrResponseTooLarge) {
		t.Errorf("one byte over the cap: %v", err)
	}
	auth = nil
	if err := c.Get(ctx, "/moved", &got); err != nil || len(auth) != 2 || auth[1] != "PVEAPIToken=root@pam!tok=s3cret" {
		t.Errorf("a redirect on the same host: %v, Authorization %q", err, auth)
	}
	if err := c.Get(ctx, "/away", &got); !errors.Is(err, pveapi.ErrRedirect) || len(other) != 0 {
		t.Errorf("a redirect to another port: %v, reached it %q", err, other)
	}
}

func TestRedactTokenID(t *testing.T) {
	for in, want := range map[string]string{
		"root@pam!tok":        "root@pam!tok",
		"root@pam!tok=secret": "root@pam!tok=REDACTED",
		"a=b=c":               "a=REDACTED",
		"":                    "",
	} {
		if got := pveapi.RedactTokenID(in); got != want {
			t.Errorf("RedactTokenID(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzRedactTokenID: nothing after the first '=' survives.
func FuzzRedactTokenID(f *testing.F) {
	for _, s := range []string{"root@pam!tok", "u@pve!id=SECRET", "=", "a=b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := pveapi.RedactTokenID(s)
		if i := strings.IndexByte(s, '='); i >= 0 {
			if got != s[:i]+"=REDACTED" {
				t.Fatalf("RedactTokenID(%q) = %q", s, got)
			}
		} else if got != s {
			t.Fatalf("RedactTokenID(%q) = %q changed an id without '='", s, got)
		}
	})
}
