package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// commands lists every command of the tree below c, c included.
func commands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		out = append(out, commands(sub)...)
	}
	return out
}

// TestUsageErrorsEveryCommand: every command of the tree answers a
// command-line mistake with exit 2 and a hint naming itself: an unknown
// flag for each command that runs, an unknown subcommand for each group.
func TestUsageErrorsEveryCommand(t *testing.T) {
	root := NewRoot(&App{})
	all := commands(root)
	if len(all) < 20 {
		t.Fatalf("the tree has %d commands; the walk is broken", len(all))
	}
	for _, c := range all {
		path := strings.TrimPrefix(c.CommandPath(), "pxsubstrate")
		args := strings.Fields(path)
		t.Run(c.CommandPath(), func(t *testing.T) {
			mistake := append(append([]string{}, args...), "--no-such-flag")
			if c.HasSubCommands() {
				mistake = append(append([]string{}, args...), "no-such-command")
			}
			_, errOut, code := run(t, mistake...)
			hint := "Run '" + c.CommandPath() + " --help' for usage."
			if code != 2 || !strings.Contains(errOut, hint) {
				t.Errorf("%q: exit %d, stderr %q; want 2 and %q", mistake, code, errOut, hint)
			}
		})
	}
	// A group without arguments prints its help and succeeds.
	if out, errOut, code := run(t, "acl"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("acl alone: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestRefusalIsNotUsage: a refusal is exit 1 even when its text reads like
// one of cobra's usage messages ("accepts "); the exit code follows the
// error's type, not its words.
func TestRefusalIsNotUsage(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "vpc.yaml")
	lookup := filepath.Join(dir, "lookup.yaml")
	refused := vpcSpec[:strings.Index(vpcSpec, "    proxmox: {}")] + "    allowSubnets: [192.168.1.0/24]\n    proxmox: {}\n"
	for p, data := range map[string]string{spec: refused, lookup: vpcLookup} {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, errOut, code := run(t, "render", "vpc", "-f", spec, "--lookup", lookup)
	if code != 1 || !strings.Contains(errOut, "accepts everything its VPC routes to it") || strings.Contains(errOut, "--help' for usage") {
		t.Errorf("a refusal mentioning \"accepts\": exit %d, stderr %q; want 1 without a usage hint", code, errOut)
	}
}

// TestRefusalEveryCommand gives every command that reads input one input
// it refuses: each exits 1, without a usage hint, since the command line
// was right. The walk checks that no command is missing.
func TestRefusalEveryCommand(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"empty.yaml":   "",
		"garbage.yaml": "kind: [",
		"user.cfg":     "user:root@pam:1:0::::::\n",
		"typo.yaml":    "customization: {systemExtension: {}}\n",
		"none.json":    "[]\n",
	})
	f := func(name string) string { return filepath.Join(dir, name) }
	live := []string{"--url", "https://127.0.0.1:1", "--token-id", "root@pam!x", "--token-secret", "s"}
	refusals := map[string][]string{
		"pxsubstrate acl apply":          append([]string{"acl", "apply", "--tenants", f("empty.yaml")}, live...),
		"pxsubstrate acl audit":          {"acl", "audit", "--tenants", f("empty.yaml"), "--user-cfg", f("user.cfg")},
		"pxsubstrate acl perms":          {"acl", "perms", "--user-cfg", f("user.cfg"), "--authid", "nobody"},
		"pxsubstrate acl plan":           {"acl", "plan", "--tenants", f("garbage.yaml")},
		"pxsubstrate admission policies": {"admission", "policies", "--config", f("garbage.yaml")},
		"pxsubstrate admission review":   {"admission", "review", "-f", f("garbage.yaml")},
		"pxsubstrate gateway priorities": {"gateway", "priorities", "--key", "vpc/a", "node-1", "node-1"},
		"pxsubstrate lint credentials":   {"lint", "credentials", "-f", f("empty.yaml")},
		"pxsubstrate lint images":        {"lint", "images", "-f", f("empty.yaml")},
		"pxsubstrate render cluster":     {"render", "cluster", "-f", f("garbage.yaml")},
		"pxsubstrate render nodes":       {"render", "nodes", "-f", f("garbage.yaml")},
		"pxsubstrate render vpc":         {"render", "vpc", "-f", f("garbage.yaml")},
		"pxsubstrate sim":                {"sim", "-f", f("garbage.yaml")},
		"pxsubstrate sdn apply":          append([]string{"sdn", "apply", "--zone", f("garbage.yaml")}, live...),
		"pxsubstrate sdn audit":          append([]string{"sdn", "audit", "--zone", f("empty.yaml")}, live...),
		"pxsubstrate sdn check":          append([]string{"sdn", "check", "--zone", f("typo.yaml")}, live...),
		"pxsubstrate sdn plan":           append([]string{"sdn", "plan", "--zone", f("garbage.yaml")}, live...),
		"pxsubstrate talos schematic-id": {"talos", "schematic-id", f("typo.yaml")},
		"pxsubstrate template create":    append([]string{"template", "create", "42", "9x", "--talos-version", "v1.13.6", "--schematic-id", guestAgentID}, live...),
		"pxsubstrate template print":     {"template", "print", "42", "9x", "--talos-version", "v1.13.6", "--schematic-id", guestAgentID},
		"pxsubstrate template select":    {"template", "select", "--tags", "cozystack,talos", "--resources", f("none.json")},
		"pxsubstrate verify":             nil, // below: it needs its clusters
		"pxsubstrate vlan ranges":        {"vlan", "ranges", "4000-4095"},
	}
	inputless := map[string]string{
		"pxsubstrate demo":    "reads no input; it fails only when one of its invariants does",
		"pxsubstrate version": "reads no input",
	}
	for _, c := range leaves(NewRoot(&App{})) {
		_, ok := refusals[c.CommandPath()]
		if _, none := inputless[c.CommandPath()]; !ok && !none {
			t.Errorf("%s: give it a refused input here", c.CommandPath())
		}
	}
	refusals["pxsubstrate verify"] = verifyArgs(t)
	withVerifyClients(t, nil, nil)
	for path, args := range refusals {
		t.Run(path, func(t *testing.T) {
			_, errOut, code := run(t, args...)
			if code != 1 || strings.Contains(errOut, "--help' for usage") || !strings.HasPrefix(errOut, "Error: ") && !strings.Contains(errOut, "\nError: ") {
				t.Errorf("%q: exit %d, stderr %q; want 1 with an error and no usage hint", args, code, errOut)
			}
		})
	}
}
