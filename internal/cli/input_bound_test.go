package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// boundedInputs gives, per command, one command line for each input file
// it reads, with $F where the file goes: each is read only after the
// inputs before it passed, so $F is the input refused.
func boundedInputs(t *testing.T) map[string][][]string {
	t.Helper()
	pool := mustRead(t, filepath.Join(scenarios, "scenarios", "nodes-raw", "input.yaml"))
	kube := mustRead(t, filepath.Join(scenarios, "scenarios", "cluster-ipv4", "input.yaml"))
	dir := writeFiles(t, map[string]string{
		"tenants.yaml": liveTenants, "zone.yaml": sdnZoneYAML, "pool.yaml": pool, "kube.yaml": kube,
		"vpc.yaml": vpcSpec, "user.cfg": "user:root@pam:1:0::::::\n", "secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {url: https://pve:8006}\n",
		"review.yaml": vnetReview("vmbr70", "", ""),
	})
	f := func(name string) string { return filepath.Join(dir, name) }
	live := []string{"--url", "https://127.0.0.1:1", "--token-id", "root@pam!pxs"}
	withSecret := append(append([]string{}, live...), "--token-secret", "s")
	spec := []string{"--talos-version", "v1.13.6", "--schematic-id", guestAgentID}
	verify := verifyArgs(t)
	proxmox := []string{"--proxmox-url", "https://127.0.0.1:1", "--proxmox-token-id", "root@pam!pxs"}
	cases := map[string][][]string{
		"pxsubstrate acl perms": {{"acl", "perms", "--authid", "root@pam", "--user-cfg", "$F"}},
		"pxsubstrate acl plan":  {{"acl", "plan", "--tenants", "$F"}, {"acl", "plan", "--tenants", f("tenants.yaml"), "--user-cfg", "$F"}},
		"pxsubstrate acl audit": {
			{"acl", "audit", "--user-cfg", f("user.cfg"), "--tenants", "$F"},
			{"acl", "audit", "--tenants", f("tenants.yaml"), "--user-cfg", "$F"},
			{"acl", "audit", "--tenants", f("tenants.yaml"), "--user-cfg", f("user.cfg"), "--clusters", "$F"},
		},
		"pxsubstrate acl apply": {
			append([]string{"acl", "apply", "--tenants", "$F"}, withSecret...),
		},
		"pxsubstrate admission policies": {{"admission", "policies", "--config", "$F"}},
		"pxsubstrate admission review": {
			{"admission", "review", "-f", "$F"},
			{"admission", "review", "-f", f("review.yaml"), "--config", "$F"},
			{"admission", "review", "-f", f("review.yaml"), "--namespace-file", "$F"},
		},
		"pxsubstrate lint images":      {{"lint", "images", "-f", "$F"}},
		"pxsubstrate lint credentials": {{"lint", "credentials", "-f", "$F"}, {"lint", "credentials", "-f", f("secret.yaml"), "--probe", "--ca-file", "$F"}},
		"pxsubstrate render cluster":   {{"render", "cluster", "-f", "$F"}, {"render", "cluster", "-f", f("kube.yaml"), "--lookup", "$F"}},
		"pxsubstrate render nodes": {
			{"render", "nodes", "-f", "$F"},
			{"render", "nodes", "-f", f("pool.yaml"), "--lookup", "$F"},
			{"render", "nodes", "-f", f("pool.yaml"), "--tenants", "$F"},
			{"render", "nodes", "-f", f("pool.yaml"), "--pci-mappings", "$F"},
		},
		"pxsubstrate render vpc": {
			{"render", "vpc", "-f", "$F"},
			{"render", "vpc", "-f", f("vpc.yaml"), "--lookup", "$F"},
			{"render", "vpc", "-f", f("vpc.yaml"), "--from-cluster", "--kubeconfig", "$F"},
		},
		"pxsubstrate sim":                {{"sim", "-f", "$F"}},
		"pxsubstrate sdn check":          {append([]string{"sdn", "check", "--zone", "$F"}, withSecret...)},
		"pxsubstrate sdn plan":           {append([]string{"sdn", "plan", "--zone", "$F"}, withSecret...)},
		"pxsubstrate sdn apply":          {append([]string{"sdn", "apply", "--zone", "$F"}, withSecret...)},
		"pxsubstrate sdn audit":          {append([]string{"sdn", "audit", "--zone", "$F"}, withSecret...)},
		"pxsubstrate talos schematic-id": {{"talos", "schematic-id", "$F"}},
		"pxsubstrate template print": {
			{"template", "print", "9000", "local-lvm", "--values", "$F"},
			{"template", "print", "9000", "local-lvm", "--schematic", "$F"},
			append([]string{"template", "print", "9000", "local-lvm", "--factory-ca", "$F"}, spec...),
		},
		"pxsubstrate template create": {
			append([]string{"template", "create", "9000", "local-lvm", "--values", "$F"}, withSecret...),
			append(append([]string{"template", "create", "9000", "local-lvm", "--schematic", "$F"}, withSecret...), "--talos-version", "v1.13.6"),
			append(append([]string{"template", "create", "9000", "local-lvm", "--factory-ca", "$F"}, withSecret...), spec...),
		},
		"pxsubstrate template select": {{"template", "select", "--tags", "cozystack,talos", "--resources", "$F"}},
		"pxsubstrate verify": {
			append(slices.Clone(verify), "--kubeconfig", "$F"),
			append(slices.Clone(verify), "--tenant-kubeconfig", "$F"),
			append(append(slices.Clone(verify), proxmox...), "--proxmox-token-secret-file", "$F"),
			append(append(slices.Clone(verify), proxmox...), "--proxmox-token-secret-file", f("user.cfg"), "--proxmox-ca-file", "$F"),
			append(slices.Clone(verify), "--certificate-authority", "$F"),
			append(slices.Clone(verify), "--client-certificate", "$F"),
			append(slices.Clone(verify), "--client-key", "$F"),
		},
	}
	// Every command that talks to the API reads --ca-file and
	// --token-secret-file (liveFlags) after its own inputs.
	for path, base := range map[string][]string{
		"pxsubstrate acl apply":       {"acl", "apply", "--tenants", f("tenants.yaml")},
		"pxsubstrate acl audit":       {"acl", "audit", "--tenants", f("tenants.yaml")},
		"pxsubstrate sdn check":       {"sdn", "check", "--zone", f("zone.yaml")},
		"pxsubstrate sdn plan":        {"sdn", "plan", "--zone", f("zone.yaml")},
		"pxsubstrate sdn apply":       {"sdn", "apply", "--zone", f("zone.yaml")},
		"pxsubstrate sdn audit":       {"sdn", "audit", "--zone", f("zone.yaml")},
		"pxsubstrate template create": append([]string{"template", "create", "9000", "local-lvm"}, spec...),
		"pxsubstrate template select": {"template", "select", "--tags", "cozystack,talos"},
	} {
		cases[path] = append(cases[path],
			append(append(slices.Clone(base), withSecret...), "--ca-file", "$F"),
			append(append(slices.Clone(base), live...), "--token-secret-file", "$F"))
	}
	return cases
}

// clientGoFiles are the flags naming files client-go reads: checked by
// checkFilesForClientGo, whose messages name the flag.
var clientGoFiles = map[string]bool{"--kubeconfig": true, "--tenant-kubeconfig": true, "--certificate-authority": true, "--client-certificate": true, "--client-key": true}

// notInputFiles are the flags whose help mentions a file or a format but
// that name no file the command reads whole.
var notInputFiles = map[string]string{
	"output":               "the output format",
	"url":                  "an address",
	"pve-version":          "a version",
	"user":                 "a kubeconfig user's name",
	"max-input-size":       "the bound itself",
	"token-secret":         "the secret's value",
	"proxmox-token-secret": "the secret's value (verify's prefixed liveFlags)",
	"secrets-dir":          "a directory written to",
	"secret-manifests":     "read by liveacl.ManifestSink up to 8 MiB (TestManifestSinkBounded)",
	"import-storage":       "a Proxmox storage name",
	"tenant-context":       "a context name",
	"context":              "a context name",
	"from-cluster":         "a switch",
	"schematic-id":         "an ID",
}

// mentionsFile is what marks a flag as naming an input file in its help.
var mentionsFile = regexp.MustCompile(`(?i)\bfile\b|yaml|json|\bpem\b|kubeconfig|user\.cfg|package values`)

// TestEveryInputFileBounded: every file a command reads, named by a flag
// or an argument, is read up to --max-input-size: an endless device
// (/dev/zero) and a regular file over the bound are refused by name with
// the flag to raise, before the command does anything else with them. The
// walk checks that every flag whose help speaks of a file is covered. The
// control, the same flags naming a file within the bound, is the commands'
// own tests (and TestTemplateSelectResourcesBound below).
func TestEveryInputFileBounded(t *testing.T) {
	inputs := boundedInputs(t)
	for _, c := range leaves(NewRoot(&App{})) {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if why, ok := notInputFiles[fl.Name]; (ok && why != "") || !mentionsFile.MatchString(fl.Usage) {
				return
			}
			covered := slices.ContainsFunc(inputs[c.CommandPath()], func(args []string) bool {
				i := slices.Index(args, "$F")
				return i > 0 && (args[i-1] == "--"+fl.Name || fl.Shorthand != "" && args[i-1] == "-"+fl.Shorthand)
			})
			if !covered {
				t.Errorf("%s --%s (%q) names a file: give it a case in boundedInputs, or a reason in notInputFiles", c.CommandPath(), fl.Name, fl.Usage)
			}
		})
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, []byte("#"+strings.Repeat("x", 80<<10)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, cases := range inputs {
		for _, args := range cases {
			for _, file := range []string{big, "/dev/zero"} {
				full := append([]string{"--max-input-size", "64Ki"}, args...)
				for i, a := range full {
					if a == "$F" {
						full[i] = file
					}
				}
				withVerifyClients(t, nil, nil) // verify builds its fake clients once per run
				_, errOut, code := run(t, full...)
				want := file + " is larger than --max-input-size (64Ki)"
				if flag := full[slices.Index(full, file)-1]; file == "/dev/zero" && clientGoFiles[flag] {
					want = flag + " /dev/zero is a device, not a file"
				} else if clientGoFiles[flag] {
					want = flag + " " + want
				}
				if code != 1 || !strings.Contains(errOut, want) {
					t.Errorf("%s %q: exit %d, stderr %.300q; want 1 and %q", path, full, code, errOut, want)
				}
			}
		}
	}
}

// TestSimApplyFileBounded: a file an apply step of a sim scenario names is
// read up to --max-input-size too: a regular file over the bound and an
// endless device are refused by name; the control, a small file, applies.
func TestSimApplyFileBounded(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"ns.yaml":  "apiVersion: v1\nkind: Namespace\nmetadata: {name: tenant-a}\n",
		"big.yaml": "#" + strings.Repeat("x", 80<<10) + "\n",
	})
	scenario := func(file string) string {
		p := filepath.Join(dir, filepath.Base(file)+".scenario.yaml")
		if err := os.WriteFile(p, []byte("steps:\n- apply: {file: "+file+"}\n- converge: true\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, errOut, code := run(t, "sim", "-f", scenario(filepath.Join(dir, "ns.yaml")), "--max-input-size", "64Ki"); code != 0 {
		t.Fatalf("the control: exit %d, stderr %q", code, errOut)
	}
	for _, file := range []string{filepath.Join(dir, "big.yaml"), "/dev/zero"} {
		_, errOut, code := run(t, "sim", "-f", scenario(file), "--max-input-size", "64Ki")
		want := "cannot read apply file: " + file + " is larger than 64 KiB (--max-input-size); raise the flag"
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", file, code, errOut, want)
		}
	}
}
