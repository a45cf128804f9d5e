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
