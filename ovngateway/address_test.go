package ovngateway_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pxsubstrate/pxsubstrate/ovngateway"
)

func TestParseAddress(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []string
		wantErr string
	}{
		"Default":      {in: "ssl:ovn-nb.cozy-kubeovn.svc:6641", want: []string{"ssl:ovn-nb.cozy-kubeovn.svc:6641"}},
		"List":         {in: "ssl:10.0.0.1:6641, ssl:10.0.0.2:6641 ,tcp:[fd00::3]:6641", want: []string{"ssl:10.0.0.1:6641", "ssl:10.0.0.2:6641", "tcp:[fd00::3]:6641"}},
		"Unix":         {in: "unix:/var/run/ovn/ovnnb_db.sock", want: []string{"unix:/var/run/ovn/ovnnb_db.sock"}},
		"Empty":        {in: " ", wantErr: "OVN NB address is empty"},
		"EmptyEntry":   {in: "tcp:a:1,,tcp:b:2", wantErr: `endpoint "": invalid input: it is empty or has no scheme`},
		"NoPort":       {in: "tcp:10.0.0.1", wantErr: `endpoint "tcp:10.0.0.1": invalid input: want tcp:<host>:<port>`},
		"BadPort":      {in: "ssl:host:66410", wantErr: `port "66410" is not a number from 1 to 65535`},
		"PaddedPort":   {in: "ssl:host:0641", wantErr: `port "0641" is not a number`},
		"Scheme":       {in: "http://nb:6641", wantErr: `unknown scheme "http"`},
		"RelativeUnix": {in: "unix:nb.sock", wantErr: "want unix:<absolute path>"},
		"QueryUnix":    {in: "unix:/run/nb.sock?x", wantErr: "want unix:<absolute path>"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ovngateway.ParseAddress(tc.in)
			if tc.wantErr != "" {
				if !errors.Is(err, ovngateway.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseAddress(%q): want an ErrInvalid containing %q, got %v", tc.in, tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseAddress(%q): -want +got:\n%s", tc.in, diff)
			}
		})
	}
}

// FuzzParseAddress: never panics; errors are ErrInvalid; an accepted list
// joined again parses to the same endpoints, each with a known scheme.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"ssl:ovn-nb.cozy-kubeovn.svc:6641", "tcp:[::1]:6641,unix:/run/nb.sock", "", ",", "tcp:a:0", "unix:/a%20b", "ssl::1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ovngateway.ParseAddress(s)
		if err != nil {
			if !errors.Is(err, ovngateway.ErrInvalid) {
				t.Fatalf("ParseAddress(%q): error %v is not ErrInvalid", s, err)
			}
			return
		}
		again, err := ovngateway.ParseAddress(strings.Join(got, ","))
		if err != nil {
			t.Fatalf("ParseAddress(%q) accepted %q but refuses it joined: %v", s, got, err)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Fatalf("not idempotent: -first +second:\n%s", diff)
		}
		for _, e := range got {
			if !strings.HasPrefix(e, "tcp:") && !strings.HasPrefix(e, "ssl:") && !strings.HasPrefix(e, "unix:/") {
				t.Fatalf("accepted endpoint %q has no known scheme", e)
			}
		}
	})
}
