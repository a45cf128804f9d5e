package cli

import (
	"fmt"

	"mvdan.cc/sh/v3/syntax"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/pxsubstrate/pxsubstrate/internal/texttable"
)

// outputKinds classifies what each command prints by default. A table is
// for people and must fit texttable.MaxWidth columns; a stream is for another
// program (YAML for kubectl, a shell program, PVE's JSON) and keeps its
// own lines. A new command must be classified here.
var outputKinds = map[string]string{
	"pxsubstrate acl apply":             "table",
	"pxsubstrate acl audit":             "table",
	"pxsubstrate sdn check":             "table",
	"pxsubstrate sdn plan":              "table",
	"pxsubstrate sdn apply":             "table",
	"pxsubstrate sdn audit":             "table",
	"pxsubstrate acl perms":             "stream: PVE's own compact JSON, as /access/permissions answers",
	"pxsubstrate acl plan":              "stream: a pveum program (-o table lists the steps)",
	"pxsubstrate admission policies":    "stream: YAML for kubectl apply -f -",
	"pxsubstrate admission review":      "table",
	"pxsubstrate demo":                  "table",
	"pxsubstrate gateway priorities":    "table",
	"pxsubstrate lint credentials":      "table",
	"pxsubstrate lint images":           "table",
	"pxsubstrate render cluster":        "stream: YAML for kubectl apply -f -",
	"pxsubstrate render nodes":          "stream: YAML for kubectl apply -f -",
	"pxsubstrate render vpc":            "stream: YAML for kubectl apply -f -",
	"pxsubstrate sim":                   "table",
	"pxsubstrate talos schematic-id":    "table",
	"pxsubstrate template create":       "table",
	"pxsubstrate template print":        "stream: a shell program of qm and pvesm commands",
	"pxsubstrate template select":       "table",
	"pxsubstrate verify":                "table",
	"pxsubstrate version":               "table",
	"pxsubstrate vlan ranges":           "table",
	"pxsubstrate completion bash":       "stream: a bash completion script",
	"pxsubstrate completion zsh":        "stream: a zsh completion script",
	"pxsubstrate completion fish":       "stream: a fish completion script",
	"pxsubstrate completion powershell": "stream: a PowerShell completion script",
}

// leaves returns the commands of the tree that do work (not groups).
func leaves(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range commands(root) {
		if !c.HasSubCommands() && c != root {
			out = append(out, c)
		}
	}
	return out
}

// TestEveryCommandIsClassified walks the command tree: every command has
// an output kind above and an Examples section.
func TestEveryCommandIsClassified(t *testing.T) {
	root := NewRoot(&App{})
	for _, c := range leaves(root) {
		if _, ok := outputKinds[c.CommandPath()]; !ok {
			t.Errorf("%s: classify its default output in outputKinds", c.CommandPath())
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Examples section", c.CommandPath())
		}
	}
}

// checkFits fails t when a default-format table line of the command args
// run is wider than texttable.MaxWidth. A line that is one unbreakable word (a URL)
// is allowed.
func checkFits(t *testing.T, args []string, out string) {
	t.Helper()
	c, rest, err := NewRoot(&App{}).Find(args)
	if err != nil || !strings.HasPrefix(outputKinds[c.CommandPath()], "table") {
		return
	}
	if err := c.ParseFlags(rest); err != nil {
		return
	}
	if f := c.Flag("output"); f != nil && f.Value.String() != "" && f.Value.String() != "table" {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(line) > texttable.MaxWidth && len(strings.Fields(line)) > 1 {
			t.Errorf("%s: a default-format line is %d columns wide (at most %d; -o wide for more):\n%s",
				c.CommandPath(), utf8.RuneCountInString(line), texttable.MaxWidth, line)
		}
	}
}

func TestNameAndJSONPath(t *testing.T) {
	cases := map[string]struct {
		args []string
		code int
		out  string
		err  string
	}{
		"JSONPath":        {args: []string{"vlan", "ranges", "100-102", "-o", "jsonpath={.count} {.ranges[0]}"}, out: "3 100-102\n"},
		"JSONPathMissing": {args: []string{"vlan", "ranges", "1", "-o", "jsonpath"}, code: 2, err: "-o jsonpath needs a template"},
		"JSONPathBad":     {args: []string{"vlan", "ranges", "1", "-o", "jsonpath={.count"}, code: 2, err: "-o jsonpath"},
		"NameNoObjects":   {args: []string{"vlan", "ranges", "1", "-o", "name"}, code: 2, err: "lists no objects"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.err) || (tc.out != "" && out != tc.out) {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr with %q", tc.args, code, out, errOut, tc.code, tc.out, tc.err)
			}
		})
	}
}

// TestOutputName: -o name lists the rendered objects as kubectl names
// them, and -o jsonpath reaches into the same List.
func TestOutputName(t *testing.T) {
	in := filepath.Join(scenarios, "scenarios", "nodes-raw", "input.yaml")
	out, errOut, code := run(t, "render", "nodes", "-f", in, "-o", "name")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	names := strings.Fields(out)
	if len(names) < 3 || !slices.Contains(names, "machinedeployment.cluster.x-k8s.io/"+lastName(names, "machinedeployment.cluster.x-k8s.io/")) {
		t.Fatalf("want kind.group/name lines with a MachineDeployment, got %q", out)
	}
	for _, n := range names {
		if !strings.Contains(n, "/") || strings.ContainsAny(n, " \t") || n != strings.ToLower(n[:strings.Index(n, "/")])+n[strings.Index(n, "/"):] {
			t.Errorf("%q is not kind.group/name with a lower-case kind", n)
		}
	}
	jp, errOut, code := run(t, "render", "nodes", "-f", in, "-o", "jsonpath={range .items[*]}{.kind}/{.metadata.name}{\"\\n\"}{end}")
	if code != 0 {
		t.Fatalf("jsonpath: exit %d: %s", code, errOut)
	}
	if got := len(strings.Fields(jp)); got != len(names) {
		t.Errorf("jsonpath lists %d objects, -o name %d:\n%s", got, len(names), jp)
	}
}

func lastName(names []string, prefix string) string {
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, prefix); ok {
			return rest
		}
	}
	return ""
}

// TestExamplesParse: every example in --help is safe to paste into bash
// and zsh, names a command of the tree, and gives it flags it has, its
// required flags and an argument count it accepts.
func TestExamplesParse(t *testing.T) {
	for _, c := range leaves(NewRoot(&App{})) {
		b := docBlock{page: c.CommandPath() + " --help", lang: "sh"}
		lines := strings.Split(c.Example, "\n")
		for i := range lines {
			lines[i] = strings.TrimPrefix(lines[i], "  ")
		}
		cmds, err := parseCommands(b, strings.Join(lines, "\n"), 1, nil)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, ex := range cmds {
			syntax.Walk(ex.stmt, func(n syntax.Node) bool {
				call, ok := n.(*syntax.CallExpr)
				if !ok {
					return true
				}
				_, args := words(&syntax.Stmt{Cmd: call})
				if len(args) == 0 || args[0] != "pxsubstrate" {
					return true
				}
				root := NewRoot(&App{})
				found, rest, err := root.Find(args[1:])
				if err == nil && found.CommandPath() != c.CommandPath() {
					err = fmt.Errorf("runs %s", found.CommandPath())
				}
				if err == nil {
					err = found.ParseFlags(rest)
				}
				if err == nil {
					err = found.ValidateRequiredFlags()
				}
				if err == nil && found.Args != nil {
					err = found.Args(found, found.Flags().Args())
				}
				if err != nil {
					t.Errorf("%s example %q: %v", c.CommandPath(), ex.text, err)
				}
				return false
			})
		}
	}
}
