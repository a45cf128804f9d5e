package permvec_test

import (
	"testing"

	"github.com/pxsubstrate/pxsubstrate/internal/permvec"
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
