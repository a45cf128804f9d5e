package permvec_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pveacl/permvec"
)

func TestLoad(t *testing.T) {
	cases, err := permvec.Load()
	if err != nil {
		t.Fatal(err)
	}
	checks := 0
	for _, c := range cases {
		if c.Config == "" || len(c.Checks) == 0 || c.Reason == "" {
			t.Errorf("%s: case %s needs a reason, a config and checks", c.File, c.Name)
		}
		checks += len(c.Checks)
	}
	if len(cases) < 8 || checks < 100 {
		t.Errorf("the vectors hold %d cases, %d checks", len(cases), checks)
	}
}

func TestParseErrors(t *testing.T) {
	for name, text := range map[string]string{
		"BeforeCase":   "privs a@pve / -\n",
		"Unknown":      "case x\nmaybe a@pve / -\n",
		"Fields":       "case x\nprivs a@pve /\n",
		"AllowList":    "case x\nallow a@pve / VM.Audit,VM.Allocate\n",
		"OpenConfig":   "case x\nconfig\nuser:a@pve:1:\n",
		"NamelessCase": "case\n",
	} {
		if _, err := permvec.Parse("f.vec", []byte(text)); err == nil {
			t.Errorf("%s: %q parsed", name, text)
		}
	}
	cases, err := permvec.Parse("f.vec", []byte("# c\ncase x\nreason r\nconfig\n  user:a@pve:1:\nend\nprivs a@pve - -\nallow a@pve!t /vms VM.Audit\n"))
	if err != nil || len(cases) != 1 || cases[0].Config != "user:a@pve:1:\n" || len(cases[0].Checks) != 2 ||
		cases[0].Checks[0].Path != "" || cases[0].Checks[0].Want != nil || cases[0].Checks[1].Want[0] != "VM.Audit" {
		t.Errorf("parsed %+v, %v", cases, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("case x\nreason r\nconfig\n  user:a@pve:1:\nend\nprivs a@pve - -\nallow a@pve!t /vms VM.Audit\n"))
	f.Add([]byte("case\n"))
	f.Add([]byte("config\nend\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cases, err := permvec.Parse("f.vec", data)
		if err != nil {
			return
		}
		for _, c := range cases {
			for _, ch := range c.Checks {
				if (ch.Kind == permvec.Allow || ch.Kind == permvec.Deny) && len(ch.Want) != 1 {
					t.Fatalf("%v: allow and deny name one privilege", ch)
				}
			}
		}
	})
}

// privs is an Evaluator that gives every user and path the same privileges.
type privs []string

func (p privs) Privileges(string, string) ([]string, error) { return p, nil }

func TestAnswer(t *testing.T) {
	ev := privs{"VM.Audit", "Datastore.Audit"}
	for _, tc := range []struct {
		check permvec.Check
		want  []string
		err   error
	}{
		{permvec.Check{Kind: permvec.Privs}, []string{"Datastore.Audit", "VM.Audit"}, nil},
		{permvec.Check{Kind: permvec.Allow, Want: []string{"VM.Audit"}}, []string{"VM.Audit"}, nil},
		{permvec.Check{Kind: permvec.Allow, Want: []string{"Sys.Audit"}}, []string{"not Sys.Audit"}, nil},
		{permvec.Check{Kind: permvec.Deny, Want: []string{"Sys.Audit"}}, []string{"Sys.Audit"}, nil},
		{permvec.Check{Kind: permvec.Deny, Want: []string{"VM.Audit"}}, []string{"not VM.Audit"}, nil},
		{permvec.Check{Kind: permvec.Roles}, nil, permvec.ErrNotAsked},
	} {
		got, err := permvec.Answer(ev, tc.check)
		if !errors.Is(err, tc.err) || !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, %v; want %v, %v", tc.check, got, err, tc.want, tc.err)
		}
	}
	if got, err := permvec.Answer(privs{}, permvec.Check{Kind: permvec.Privs}); err != nil || got != nil {
		t.Errorf("no privileges: got %#v, %v; want nil", got, err)
	}
}
