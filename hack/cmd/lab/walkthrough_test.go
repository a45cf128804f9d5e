package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
)

const repoRoot = "../../.."

// walkthroughSection is the heading of the section of docs/cluster-api.md
// whose commands TestCapmoxLabWalkthrough runs.
const walkthroughSection = "## A lab on your machine"

// step is one command of the walkthrough with the lines shown after it.
type step struct {
	line    int
	command string
	shown   []string
}

// TestCapmoxLabWalkthrough runs the commands of docs/cluster-api.md's
// "A lab on your machine" in order, as one shell session would (exported
// variables carry from one command to the next), with the lab in a folder
// of its own: hack/lab.sh up, env, apply (a refusal and a tenant), status
// until the Machines run with their addresses, a volume's life, the lab's
// zone, apply of a tenant's VPC (a refusal, then the VPC with a cluster
// on its subnet: the network Ready on its VLAN, the Machines running with
// addresses of the subnet), template select against the lab's Proxmox VE,
// and down. Each command must succeed, but for a refusal, whose shown
// output starts with "lab: "; each shown line must appear in order in
// what it prints. After down no process of the lab is left.
func TestCapmoxLabWalkthrough(t *testing.T) {
	steps := walkthrough(t)
	if len(steps) < 6 {
		t.Fatalf("docs/cluster-api.md's %q has %d commands; the walkthrough lost its steps", walkthroughSection, len(steps))
	}
	dir := t.TempDir()
	envFile := filepath.Join(dir, "env")
	if err := os.WriteFile(envFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	labDir := filepath.Join(dir, "lab")
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(labDir, "lab.log"))
			t.Logf("the lab's log, its last lines:\n%s", lastLines(string(log), 40))
		}
		// A failed step must not leave a lab running.
		out, _ := exec.Command("bash", "-c", "cd "+repoRoot+" && PXSUBSTRATE_LAB_DIR="+labDir+" hack/lab.sh down").CombinedOutput()
		t.Logf("cleanup: %s", out)
	})
	var pids []string
	for _, s := range steps {
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
		script := fmt.Sprintf("set -a; . %q; set +a\n%s\nrc=$?\nexport -p > %q\nexit $rc\n", envFile, s.command, envFile)
		cmd := exec.CommandContext(ctx, "bash", "-c", script)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "PXSUBSTRATE_LAB_DIR="+labDir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		refusal := len(s.shown) > 0 && strings.HasPrefix(s.shown[0], "lab: ")
		switch {
		case refusal && err == nil:
			t.Fatalf("docs/cluster-api.md:%d: %s: succeeded, the page shows a refusal:\n%s", s.line, s.command, out.String())
		case !refusal && err != nil:
			t.Fatalf("docs/cluster-api.md:%d: %s: %v\n%s", s.line, s.command, err, out.String())
		}
		if err := matchShown(s.shown, out.String()); err != nil {
			t.Fatalf("docs/cluster-api.md:%d: %s: %v\nit printed:\n%s", s.line, s.command, err, out.String())
		}
		if strings.HasPrefix(s.command, "hack/lab.sh status") {
			pids = regexp.MustCompile(`(?m)^(\d+)\s`).FindAllString(out.String(), -1)
		}
	}
	if len(pids) < 10 {
		t.Fatalf("status listed %d processes, want the supervisor, two API servers with their etcd, four managers, pvelab and the controller", len(pids))
	}
	for _, p := range pids {
		pid, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			t.Fatal(err)
		}
		if lab.Alive(pid) {
			t.Errorf("process %d (%s) of the lab still runs after down", pid, lab.Comm(pid))
		}
	}
}

// walkthrough reads the commands of the section from the page's sh and
// console blocks.
func walkthrough(t *testing.T) []step {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "docs", "cluster-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []step
	in, lang := false, ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == walkthroughSection
		case !in:
		case strings.HasPrefix(line, "```") && lang == "":
			lang = strings.TrimPrefix(line, "```")
			if lang == "" {
				lang = "text"
			}
		case strings.HasPrefix(line, "```"):
			lang = ""
		case lang == "sh":
			steps = append(steps, step{line: n, command: line})
		case lang == "console" && strings.HasPrefix(line, "$ "):
			steps = append(steps, step{line: n, command: strings.TrimPrefix(line, "$ ")})
		case lang == "console" && len(steps) > 0:
			steps[len(steps)-1].shown = append(steps[len(steps)-1].shown, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return steps
}

var spaces = regexp.MustCompile(`\s+`)

// matchShown checks that each shown line ("..." aside) matches a line of
// out, in order: runs of spaces count as one and <...> stands for any
// text.
func matchShown(shown []string, out string) error {
	lines := strings.Split(out, "\n")
	i := 0
	for _, s := range shown {
		if strings.TrimSpace(s) == "..." {
			continue
		}
		re, err := shownPattern(s)
		if err != nil {
			return err
		}
		for i < len(lines) && !re.MatchString(spaces.ReplaceAllString(strings.TrimSpace(lines[i]), " ")) {
			i++
		}
		if i == len(lines) {
			return fmt.Errorf("the shown line %q is not in the output (in order)", s)
		}
		i++
	}
	return nil
}

var placeholder = regexp.MustCompile(`<[^<>]*>`)

func shownPattern(s string) (*regexp.Regexp, error) {
	s = spaces.ReplaceAllString(strings.TrimSpace(s), " ")
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, m := range placeholder.FindAllStringIndex(s, -1) {
		b.WriteString(regexp.QuoteMeta(s[last:m[0]]))
		b.WriteString(".+")
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(s[last:]))
	b.WriteString("$")
	return regexp.Compile(b.String())
}

func TestMatchShown(t *testing.T) {
	out := "lab: starting\nKUBECONFIG=/tmp/x/kubeconfig\nPID  PROCESS   STATE\n12   pvelab    running\n"
	for _, tc := range []struct {
		shown []string
		ok    bool
	}{
		{[]string{"KUBECONFIG=<lab>/kubeconfig"}, true},
		{[]string{"...", "<pid> pvelab running"}, true},
		{[]string{"PID PROCESS STATE", "KUBECONFIG=<lab>/kubeconfig"}, false},
		{[]string{"KUBECONFIG=<lab>/kubeconfig.bak"}, false},
		{[]string{"<pid> capmox-manager running"}, false},
		{[]string{"lab: starting", "lab: starting"}, false},
	} {
		if err := matchShown(tc.shown, out); (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.shown, err)
		}
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
