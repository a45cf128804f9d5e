package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestLiveFlagsOneSet: acl's and verify's Proxmox connection flags are one
// set, bound once without a prefix and once under proxmox-: the same
// flags, the variables capmox reads only for the first, and the missing
// ones named in each spelling.
func TestLiveFlagsOneSet(t *testing.T) {
	t.Setenv(envURL, "https://pve.example:8006")
	t.Setenv(envToken, "capmox@pve!capi")
	t.Setenv(envSecret, "from-the-environment")
	plain, prefixed := liveFlags{}, proxmoxCheckFlags()
	a, b := pflag.NewFlagSet("acl", pflag.ContinueOnError), pflag.NewFlagSet("verify", pflag.ContinueOnError)
	plain.bind(a)
	bindProxmoxChecks(&prefixed, b)
	var names []string
	a.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	for _, n := range names {
		if b.Lookup("proxmox-"+n) == nil {
			t.Errorf("verify lacks --proxmox-%s, the prefixed spelling of --%s", n, n)
		}
	}
	if err := plain.complete(); err != nil || plain.url != "https://pve.example:8006" || plain.tokenID != "capmox@pve!capi" {
		t.Errorf("without a prefix the variables fill the absent flags: %v, %q %q", err, plain.url, plain.tokenID)
	}
	if s, _, err := plain.secret(nil); err != nil || s != "from-the-environment" {
		t.Errorf("without a prefix PROXMOX_SECRET is the secret: %q %v", s, err)
	}
	if prefixed.wanted() {
		t.Error("the variables must not turn verify's Proxmox checks on")
	}
	if err := b.Parse([]string{"--proxmox-url", "https://pve.example:8006"}); err != nil {
		t.Fatal(err)
	}
	err := prefixed.complete()
	if !prefixed.wanted() || err == nil || !strings.Contains(err.Error(), "the Proxmox checks need --proxmox-token-id and --proxmox-token-secret-file too") {
		t.Errorf("--proxmox-url alone: wanted %v, %v", prefixed.wanted(), err)
	}
	if _, _, err := prefixed.secret(nil); err == nil || !strings.Contains(err.Error(), "pass --proxmox-token-secret-file (or --proxmox-token-secret)") {
		t.Errorf("the prefixed set takes no secret from the environment: %v", err)
	}
}
