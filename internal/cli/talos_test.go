package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// talosRun runs the CLI in-process with stdin and returns stdout, stderr and
// the exit code.
func talosRun(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runIn(t, stdin, args...)
}

// writeFiles writes name→content into a fresh directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const (
	guestAgentSchematic = "customization:\n  systemExtensions:\n    officialExtensions:\n      - siderolabs/qemu-guest-agent\n"
	guestAgentID        = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
)

func TestTalosSchematicID(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"agent.yaml": guestAgentSchematic,
		"zfs.yaml":   "customization: {systemExtensions: {officialExtensions: [siderolabs/qemu-guest-agent, siderolabs/zfs]}}\n",
		"bad.yaml":   "customization: {extensions: []}\n",
	})
	cases := map[string]struct {
		reason string
		stdin  string
		args   []string
		code   int
		out    string
		errOut string
	}{
		"File":  {reason: "the ID of Talos' Proxmox guide", args: []string{"talos", "schematic-id", filepath.Join(dir, "agent.yaml")}, out: guestAgentID + "\n"},
		"Stdin": {reason: "- reads standard input", stdin: `{}`, args: []string{"talos", "schematic-id", "-"}, out: "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba\n"},
		"ZFS": {reason: "a zfs schematic gets its ID and a warning that it cannot back a VM template",
			args: []string{"talos", "schematic-id", filepath.Join(dir, "zfs.yaml")}, errOut: "/dev/zfs"},
		"Strict": {reason: "an unknown field is refused, naming it", args: []string{"talos", "schematic-id", filepath.Join(dir, "bad.yaml")}, code: 1,
			errOut: `unknown field "extensions" in customization`},
		"Missing": {reason: "a missing file is a clear error", args: []string{"talos", "schematic-id", filepath.Join(dir, "nope.yaml")}, code: 1,
			errOut: "cannot read " + filepath.Join(dir, "nope.yaml")},
		"NoArg": {reason: "the file is required", args: []string{"talos", "schematic-id"}, code: 2, errOut: "accepts 1 arg"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := talosRun(t, tc.stdin, tc.args...)
			if code != tc.code {
				t.Fatalf("%s: exit %d, want %d (stderr %q)", tc.reason, code, tc.code, errOut)
			}
			if tc.out != "" && out != tc.out {
				t.Errorf("%s: stdout %q, want %q", tc.reason, out, tc.out)
			}
			if !strings.Contains(errOut, tc.errOut) {
				t.Errorf("%s: stderr %q, want it to contain %q", tc.reason, errOut, tc.errOut)
			}
		})
	}
}

func TestTalosSchematicIDJSON(t *testing.T) {
	out, errOut, code := talosRun(t, guestAgentSchematic, "talos", "schematic-id", "-", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got schematicIDResult
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	want := schematicIDResult{ID: guestAgentID, Extensions: []string{"siderolabs/qemu-guest-agent"},
		Schematic: "customization:\n    systemExtensions:\n        officialExtensions:\n            - siderolabs/qemu-guest-agent\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}
