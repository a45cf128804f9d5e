package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// The documentation test: every command README.md and docs/*.md show in
// a sh or console block is parsed as bash parses it, checked to be safe to
// paste into interactive bash and zsh, and run (or named with the test
// that runs it). Console blocks show output: the lines shown must appear in
// that order in what the command prints ("..." skips lines).

const repoRoot = "../.."

// docBlock is one fenced code block of a page.
type docBlock struct {
	page, lang, body string
	line             int    // of the opening fence
	file             string // the name in a "<!-- file: NAME -->" marker just before it
	// fault is a "<!-- fake: fail-reload NODE [MESSAGE] -->" marker just
	// before it: the page's Proxmox fake fails NODE's network reloads with
	// MESSAGE from this block on (no MESSAGE: reloads succeed again).
	fault []string
}

// docCommand is one command of a sh or console block.
type docCommand struct {
	page   string
	line   int
	text   string   // as shown, continuation lines joined
	output []string // console blocks: the lines shown after it
	stmt   *syntax.Stmt
}

func (c docCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.page, c.line, c.text) }

var (
	fileMarker  = regexp.MustCompile(`^<!-- file: (\S+) -->$`)
	faultMarker = regexp.MustCompile(`^<!-- fake: fail-reload (\S+) ?(.*?) -->$`)
)

// docPages returns README.md and docs/*.md, relative to the repository.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, p := range pages {
		out = append(out, strings.TrimPrefix(p, repoRoot+"/"))
	}
	return out
}

// readBlocks returns the fenced blocks of page.
func readBlocks(t *testing.T, page string) []docBlock {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, page))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []docBlock
	var cur *docBlock
	marker := ""
	var fault []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &docBlock{page: page, line: n, lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), file: marker, fault: fault}
			fault = nil
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.body += line + "\n"
		}
		if m := faultMarker.FindStringSubmatch(strings.TrimSpace(line)); m != nil && cur == nil {
			fault = m[1:]
		}
		if m := fileMarker.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			marker = m[1]
		} else if strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "```") {
			marker = ""
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// programs are the first words that make an untagged block a command block.
var programs = regexp.MustCompile(`^(\$ |pxsubstrate |go |kubectl |helm |make |curl |hack/|bin/)`)

// commandsOf parses the commands of a block; untagged blocks that hold
// commands are an error, since readers and this test tell commands from
// output by the tag (text says a block holds none).
func commandsOf(b docBlock) ([]docCommand, error) {
	switch b.lang {
	case "sh", "bash", "shell":
		return parseCommands(b, b.body, b.line+1, nil)
	case "console":
		return consoleCommands(b)
	case "":
		for _, line := range strings.Split(b.body, "\n") {
			if programs.MatchString(line) {
				return nil, fmt.Errorf("%s:%d: a block of commands must be tagged sh (commands only) or console ($ prompts and output)", b.page, b.line)
			}
		}
	}
	return nil, nil
}

// consoleCommands splits a console block into "$ " commands (with their
// continuation lines) and the output lines after each.
func consoleCommands(b docBlock) ([]docCommand, error) {
	var out []docCommand
	lines := strings.Split(strings.TrimSuffix(b.body, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "$ ") {
			if len(out) == 0 {
				return nil, fmt.Errorf("%s:%d: a console block starts with a \"$ \" command", b.page, b.line)
			}
			out[len(out)-1].output = append(out[len(out)-1].output, lines[i])
			continue
		}
		start := i
		text := strings.TrimPrefix(lines[i], "$ ")
		for strings.HasSuffix(text, "\\") && i+1 < len(lines) {
			i++
			text += "\n" + lines[i]
		}
		cmds, err := parseCommands(b, text, b.line+1+start, nil)
		if err != nil {
			return nil, err
		}
		if len(cmds) != 1 {
			return nil, fmt.Errorf("%s:%d: one command per \"$ \" line", b.page, b.line+1+start)
		}
		out = append(out, cmds[0])
	}
	return out, nil
}

// parseCommands parses src as interactive bash would and checks that
// pasting it into bash or zsh runs what it shows.
func parseCommands(b docBlock, src string, first int, _ []string) ([]docCommand, error) {
	f, err := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), b.page)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", b.page, first, err)
	}
	if len(f.Last) > 0 {
		return nil, pasteError(b.page, first+int(f.Last[0].Pos().Line())-1, "a comment")
	}
	var out []docCommand
	for _, st := range f.Stmts {
		line := first + int(st.Pos().Line()) - 1
		if len(st.Comments) > 0 {
			return nil, pasteError(b.page, line, "a comment")
		}
		var bang error
		syntax.Walk(st, func(n syntax.Node) bool {
			if lit, ok := n.(*syntax.Lit); ok && strings.Contains(lit.Value, "!") && bang == nil {
				bang = fmt.Errorf("%s:%d: %q: an unquoted or double-quoted ! starts history expansion in interactive bash and zsh; put the word in single quotes", b.page, line, lit.Value)
			}
			return true
		})
		if bang != nil {
			return nil, bang
		}
		text := src[st.Pos().Offset():st.End().Offset()]
		out = append(out, docCommand{page: b.page, line: line, text: text, stmt: st})
	}
	return out, nil
}

func pasteError(page string, line int, what string) error {
	return fmt.Errorf("%s:%d: %s in a command block: interactive zsh (without interactivecomments) passes # and the words after it as arguments; say it in the text around the block", page, line, what)
}

// words returns the literal words of a simple command (nil when it is
// not one), with its variable assignments.
func words(st *syntax.Stmt) (assigns, args []string) {
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok {
		return nil, nil
	}
	for _, a := range call.Assigns {
		v := ""
		if a.Value != nil {
			v, _ = expand.Literal(nil, a.Value)
		}
		assigns = append(assigns, a.Name.Value+"="+v)
	}
	for _, w := range call.Args {
		s, err := expand.Literal(nil, w)
		if err != nil {
			return assigns, nil
		}
		args = append(args, s)
	}
	return assigns, args
}

// matchOutput checks that the lines shown appear in order in got, each
// equal to a line of got with trailing spaces removed. "..." skips lines;
// the lines between two "..." follow each other, and without a leading
// "..." the first line shown is the first line printed.
func matchOutput(shown []string, got string) error {
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	var runs [][]string
	run, anchored := []string{}, true
	for i, want := range shown {
		want = strings.TrimRight(want, " ")
		if want == "..." {
			if i == 0 {
				anchored = false
			}
			runs, run = append(runs, run), []string{}
			continue
		}
		run = append(run, want)
	}
	runs = append(runs, run)
	at := 0
	for k, run := range runs {
		if len(run) == 0 {
			continue
		}
		found := -1
		for i := at; i+len(run) <= len(lines); i++ {
			if slices.Equal(lines[i:i+len(run)], run) {
				found = i
				break
			}
			if k == 0 && anchored {
				break
			}
		}
		if found < 0 {
			return fmt.Errorf("the page shows\n%s\nwhere the command prints:\n%s", strings.Join(run, "\n"), strings.Join(lines[at:], "\n"))
		}
		at = found + len(run)
	}
	return nil
}

// TestDocCommandsParse: every command block of every page is tagged, and
// each command parses and is safe to paste into bash and zsh.
func TestDocCommandsParse(t *testing.T) {
	n := 0
	for _, page := range docPages(t) {
		for _, b := range readBlocks(t, page) {
			cmds, err := commandsOf(b)
			if err != nil {
				t.Error(err)
			}
			n += len(cmds)
		}
	}
	if n < 40 {
		t.Errorf("found %d documented commands; the reader is broken", n)
	}
}

// TestMatchOutput checks the output comparison itself.
func TestMatchOutput(t *testing.T) {
	got := "a\nb  \nc\nd\n"
	for _, tc := range []struct {
		shown []string
		ok    bool
	}{
		{[]string{"a", "b"}, true},
		{[]string{"a", "...", "d"}, true},
		{[]string{"a", "c"}, false},
		{[]string{"b", "a"}, false},
		{[]string{"a", "...", "e"}, false},
		{[]string{"...", "c", "d"}, true},
		{[]string{"b"}, false},
		{[]string{"a", "...", "b", "d"}, false},
	} {
		if err := matchOutput(tc.shown, got); (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.shown, err)
		}
	}
}

// runShell runs a command through bash in the repository, for the go
// commands the pages show; as in a reader's shell, a pipeline's status
// is its last command's.
func runShell(ctx context.Context, text string, env ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", "-c", text)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// covered names the commands another test runs, by page and a pattern of
// the command; TestDocCommandsRun checks that the named test exists.
var covered = []struct {
	page, pattern, file, test string
}{
	{"README.md", `^hack/test\.sh$`, ".ci/run", "hack/test.sh"},
	{"docs/performance.md", `^CI=true bash \.ci/run$`, ".ci/run", "hack/test.sh"},
	{"docs/performance.md", `^PXSUBSTRATE_CACHE=\S+ GOCACHE=\S+ GOMODCACHE=\S+ hack/ccmcsi-assets\.sh$`, "hack/test.sh", "hack/ccmcsi-assets.sh"},
	{"docs/cluster-api.md", `^hack/capi-assets\.sh$`, "hack/test.sh", "hack/capi-assets.sh"},
	{"docs/cluster-api.md", `^hack/test\.sh -run TestIPAMProvider \./e2e$`, "e2e/ipam_test.go", "func TestIPAMProvider("},
	{"docs/cluster-api.md", `^hack/test\.sh -run TestCapmox \./internal/testenv/capi$`, "internal/testenv/capi/capmox_test.go", "func TestCapmoxManagersStart("},
	{"docs/cluster-api.md", `^hack/test\.sh -run TestCapmox \./internal/testenv/lab$`, "internal/testenv/lab/capmox_test.go", "func TestCapmoxWorkersRun("},
	{"docs/cluster-api.md", `^hack/lab\.sh |^set -a;$|^eval "\$\(hack/lab\.sh env\)";$|^set \+a$|\$PROXMOX_URL|^export TENANT=|^export PV=|^"\$KUBECTL"`, "hack/cmd/lab/walkthrough_test.go", "func TestCapmoxLabWalkthrough("},
	{"README.md", `^hack/lab\.sh `, "hack/cmd/lab/walkthrough_test.go", "func TestCapmoxLabWalkthrough("},
	{"docs/embedding.md", `.`, "internal/layering/embedding_test.go", "func TestEmbeddingDoc("},
	{"docs/pveacl.md", `^for p in pveacl `, "internal/layering/pveacl_test.go", "func TestPveaclExportedNames("},
	{"docs/ovngateway.md", `-run TestGatewayDataPlane`, "internal/testenv/ovnlab/dataplane_test.go", "func TestGatewayDataPlane("},
	{"docs/ovngateway.md", `-run TestThreeTrunkNodes`, "internal/testenv/ovnlab/threetrunk_test.go", "func TestThreeTrunkNodes("},
	{"docs/performance.md", `^go test (-race )?\./e2e -run TestFault -v`, "e2e/fault_test.go", "func TestFaultLeaderKill("},
	{"docs/ovngateway.md", `-run TestFault -v -fault-kills=10$`, "internal/testenv/ovnlab/fault_test.go", "func TestFaultLeaderKilledDuringConverge("},
	{"docs/ovngateway.md", `-run TestFaultNBLost -v -nb-losses=3$`, "e2e/fault_nb_test.go", "func TestFaultNBLost("},
	{"docs/operator-guide.md", `^helm `, "charts/package_test.go", "func TestFromPackage("},
	{"docs/operator-guide.md", `^hack/test\.sh -run TestHAPoolWorkers \./internal/testenv/lab$`, "internal/testenv/lab/ha_test.go", "func TestHAPoolWorkers("},
	{"docs/operator-guide.md", `^hack/test\.sh -run TestHeal \./internal/testenv/lab$`, "internal/testenv/lab/heal_test.go", "func TestHealLostClone("},
	{"docs/performance.md", `^PXSUBSTRATE_HEAL_RUNS=`, "internal/testenv/lab/heal_test.go", "func measureHeal("},
	{"docs/operator-guide.md", `^hack/test\.sh -run TestFailureDomains \./internal/testenv/lab$`, "internal/testenv/lab/failuredomains_test.go", "func TestFailureDomains("},
	{"docs/performance.md", `^hack/test\.sh -run TestFailureDomains \./internal/testenv/lab$`, "internal/testenv/lab/failuredomains_test.go", "func TestFailureDomains("},
	{"docs/operator-guide.md", `^make image$`, "hack/tools/imagebuild/image_test.go", "func TestMakeImage("},
	{"docs/operator-guide.md", `^hack/test\.sh -run TestLocalTemplates \./internal/testenv/lab$`, "internal/testenv/lab/localtemplates_test.go", "func TestLocalTemplates("},
}

// notRun are the commands that need what no test here has: a running
// cluster with kubelets, a registry login, a browser-facing port-forward.
var notRun = []struct{ pattern, why string }{
	{`^kubectl `, "needs a management cluster with the controller running"},
	{`^skopeo `, "needs a registry to push to"},
	{`^crane digest `, "asks a registry for a digest; no registry is reachable from the tests"},
	{`^curl -X POST --data-binary @\S+ https://factory\.talos\.dev/schematics$`, "registers a schematic with the public Image Factory, which no test reaches"},
	{`^curl `, "reads a running controller's metrics endpoint, or posts a schematic to the Image Factory: neither is reachable from the tests"},
	{`^cd config/default && kustomize `, "edits the checkout's kustomization for a registry"},
	{`^go tool pprof `, "reads the profile the benchmark before it writes; benchmarks are checked, not run"},
}

// TestDocCommandsRun runs every documented command: pxsubstrate commands
// in-process against the fakes (a Proxmox VE API over TLS, fake clusters
// for verify), in a folder holding the files the page shows or
// testdata/docs holds; go commands in the repository. A command another
// test runs must name that test; the rest must say why they cannot run.
func TestDocCommandsRun(t *testing.T) {
	for _, page := range docPages(t) {
		t.Run(strings.ReplaceAll(strings.TrimSuffix(page, ".md"), "/", "_"), func(t *testing.T) {
			w := newDocWorld(t, page)
			for _, b := range readBlocks(t, page) {
				if b.file != "" {
					w.write(b.file, b.body)
				}
				if b.fault != nil {
					w.fake().srv.FailNodeReload(b.fault[0], b.fault[1])
				}
				cmds, err := commandsOf(b)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cmds {
					w.run(c)
				}
			}
		})
	}
}

// docWorld is one page's folder and fakes.
type docWorld struct {
	t    *testing.T
	page string
	dir  string
	pve  *docPVE
}

func newDocWorld(t *testing.T, page string) *docWorld {
	t.Helper()
	dir := t.TempDir()
	fixtures := filepath.Join("testdata", "docs", strings.TrimSuffix(filepath.Base(page), ".md"))
	if err := os.CopyFS(dir, os.DirFS(fixtures)); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(filepath.Join(repoRoot, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(dir, "internal")); err != nil {
		t.Fatal(err)
	}
	return &docWorld{t: t, page: page, dir: dir}
}

func (w *docWorld) write(name, body string) {
	w.t.Helper()
	path := filepath.Join(w.dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// run runs one command the way its first word says.
func (w *docWorld) run(c docCommand) {
	t := w.t
	t.Helper()
	for _, cv := range covered {
		if cv.page == w.page && regexp.MustCompile(cv.pattern).MatchString(c.text) {
			b, err := os.ReadFile(filepath.Join(repoRoot, cv.file))
			if err != nil || !strings.Contains(string(b), cv.test) {
				t.Errorf("%s: run by %s in %s, which is not there (%v)", c, cv.test, cv.file, err)
			}
			return
		}
	}
	for _, nr := range notRun {
		if regexp.MustCompile(nr.pattern).MatchString(c.text) {
			return
		}
	}
	if dir, bin := subshellTestBinary(c.stmt); bin != nil {
		w.benchmark(c, append([]string{"go", "test", "./" + dir}, bin...))
		return
	}
	assigns, args := words(c.stmt)
	switch {
	case len(args) > 4 && args[0] == "go" && args[1] == "test" && args[2] == "-c":
		w.compileOnly(c, args[len(args)-1])
	case len(args) > 0 && args[0] == "pxsubstrate":
		w.pxsubstrate(c, args[1:])
	case len(args) > 2 && args[0] == "pvesh":
		w.pvesh(c, args[1:])
	case len(args) > 3 && args[0] == "go" && args[1] == "run" && args[2] == "./cmd/pxsubstrate":
		w.pxsubstrate(c, args[3:])
	case len(args) > 0 && args[0] == "go" && args[1] == "test" && slices.Contains(args, "-bench"):
		w.benchmark(c, args)
	case len(args) > 0 && args[0] == "cat" && len(args) == 2:
		w.write(args[1], strings.Join(c.output, "\n")+"\n")
	case strings.HasPrefix(c.text, "go ") || strings.HasPrefix(c.text, "bin/proxmox-network-controller "):
		out, err := runShell(t.Context(), c.text, assigns...)
		if err != nil {
			t.Errorf("%s: %v\n%s", c, err, out)
		} else if err := matchOutput(c.output, out); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	default:
		t.Errorf("%s: no test runs this command; run it here or name the test that does", c)
	}
}

// docHosts are the Proxmox VE addresses the pages use; each stands for
// the page's fake.
var docHosts = regexp.MustCompile(`^https://(pve1|pve1\.example|host):8006$`)

// pxsubstrate runs a pxsubstrate command in the page's folder. An
// address of docHosts becomes the fake's; the fake's CA is trusted
// through --ca-file (written where the command names one, added where
// it does not, as a system trust store would hold the cluster's CA); the
// token the command names exists on the fake with the secret its
// --token-secret-file holds; /etc/pve/user.cfg is the folder's user.cfg.
func (w *docWorld) pxsubstrate(c docCommand, args []string) {
	t := w.t
	t.Helper()
	args = slices.Clone(args)
	live := false
	for i, a := range args {
		switch {
		case docHosts.MatchString(a):
			args[i], live = w.fake().bare, true
		case a == "/etc/pve/user.cfg":
			args[i] = "user.cfg"
		}
	}
	if live {
		w.prepareLive(args)
		if args[0] == "sdn" {
			w.prepareSDN()
		}
		if !slices.Contains(args, "--ca-file") {
			args = append(args, "--ca-file", "docs-fake-ca.pem")
			w.write("docs-fake-ca.pem", string(w.pve.srv.CertificatePEM()))
		}
	}
	if flagValue(args, "--kubeconfig") != "" || flagValue(args, "--tenant-kubeconfig") != "" {
		withVerifyClients(t, []*corev1.Node{verifyNode("w1", verifyUUID1, true)},
			[]*unstructured.Unstructured{verifyMachineIn("tenant-alpha", "kubernetes-alpha", "v1beta1", "m1", verifyUUID1, "w1")})
	}
	home, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(w.dir)
	out, errOut, code := runIn(t, "", args...)
	t.Chdir(home)
	shown := strings.Join(c.output, "\n")
	refusal := strings.Contains(shown, "Error: ")
	if (code != 0) != refusal {
		t.Errorf("%s: exit %d (the page shows %s)\n%s%s", c, code, map[bool]string{true: "a refusal", false: "success"}[refusal], out, errOut)
		return
	}
	if err := matchOutput(c.output, out+errOut); err != nil {
		t.Errorf("%s: %v", c, err)
	}
}

// pveshMethods are pvesh's verbs and the API methods they call.
var pveshMethods = map[string]string{"get": http.MethodGet, "create": http.MethodPost, "set": http.MethodPut, "delete": http.MethodDelete}

// pvesh runs a pvesh command of a page against the page's Proxmox fake,
// as root@pam on a node runs it: VERB PATH, then --KEY VALUE parameters
// (a key given twice is a list, as pvesh sends it); --output-format json
// prints the answer's data as JSON, and a "> FILE" redirect writes what it
// prints into the page's folder.
func (w *docWorld) pvesh(c docCommand, args []string) {
	t := w.t
	t.Helper()
	method, ok := pveshMethods[args[0]]
	if !ok || !strings.HasPrefix(args[1], "/") {
		t.Errorf("%s: pvesh %s %s is not a verb and an API path this test runs", c, args[0], args[1])
		return
	}
	form, jsonOut := url.Values{}, false
	for i := 2; i < len(args); i += 2 {
		k, _ := strings.CutPrefix(args[i], "--")
		if i+1 >= len(args) || k == args[i] {
			t.Errorf("%s: %q is not a --KEY VALUE parameter", c, args[i])
			return
		}
		if k == "output-format" {
			jsonOut = args[i+1] == "json"
			continue
		}
		form.Add(k, args[i+1])
	}
	srv := w.fake().srv
	target := srv.URL + args[1]
	var body io.Reader
	if method == http.MethodGet || method == http.MethodDelete {
		target += "?" + form.Encode()
	} else {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(t.Context(), method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "PVEAPIToken="+srv.RootTokenID+"="+srv.RootSecret)
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Data json.RawMessage `json:"data"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &answer) != nil {
		t.Errorf("%s: %s\n%s", c, resp.Status, raw)
		return
	}
	out := ""
	if jsonOut && string(answer.Data) != "null" {
		out = string(answer.Data) + "\n"
	}
	if r := c.stmt.Redirs; len(r) == 1 && r[0].Op == syntax.RdrOut && r[0].Word != nil {
		name, _ := expand.Literal(nil, r[0].Word)
		w.write(name, out)
		out = ""
	}
	if err := matchOutput(c.output, out); err != nil {
		t.Errorf("%s: %v", c, err)
	}
}

// subshellTestBinary reads "(cd DIR && [VAR=...] [taskset -c CPUS]
// BIN.test -test.X ...)": the package folder and the arguments with -test.
// removed from go test's own flags, as go test would pass them.
func subshellTestBinary(st *syntax.Stmt) (string, []string) {
	sub, ok := st.Cmd.(*syntax.Subshell)
	if !ok || len(sub.Stmts) != 1 {
		return "", nil
	}
	and, ok := sub.Stmts[0].Cmd.(*syntax.BinaryCmd)
	if !ok || and.Op != syntax.AndStmt {
		return "", nil
	}
	_, cd := words(and.X)
	_, run := words(and.Y)
	if len(run) > 3 && run[0] == "taskset" && run[1] == "-c" {
		run = run[3:]
	}
	if len(cd) != 2 || cd[0] != "cd" || len(run) == 0 || !strings.HasSuffix(run[0], ".test") {
		return "", nil
	}
	args := make([]string, 0, len(run)-1)
	for _, a := range run[1:] {
		args = append(args, strings.Replace(a, "-test.", "-", 1))
	}
	return cd[1], args
}

// compileOnly checks a "go test -c" command: the package has tests (the
// suite's go vet compiles them).
func (w *docWorld) compileOnly(c docCommand, pkg string) {
	w.t.Helper()
	if files, _ := filepath.Glob(filepath.Join(repoRoot, pkg, "*_test.go")); len(files) == 0 {
		w.t.Errorf("%s: %s has no tests to compile", c, pkg)
	}
}

// flagValue is the value after flag in args, or "".
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// benchmark checks a documented benchmark command without running the
// benchmarks, which take minutes to an hour, or linking their binaries
// (go vet in CI compiles them): each package exists, the -bench pattern
// names at least one of their Benchmark functions (its first element, as
// go test matches top-level benchmarks), and every flag the command
// passes to the test binary is defined in the package's tests.
func (w *docWorld) benchmark(c docCommand, args []string) {
	t := w.t
	t.Helper()
	pkgs, pattern, flags := benchArgs(args)
	first, _, _ := strings.Cut(pattern, "/")
	re, err := regexp.Compile(first)
	if err != nil || len(pkgs) == 0 {
		t.Errorf("%s: cannot read the -bench pattern or the packages: %v", c, err)
		return
	}
	found := false
	for _, pkg := range pkgs {
		benches, defined := testSymbols(t, filepath.Join(repoRoot, pkg))
		found = found || slices.ContainsFunc(benches, re.MatchString)
		for _, f := range flags {
			if len(pkgs) == 1 && !slices.Contains(defined, f) {
				t.Errorf("%s: the tests of %s define no flag -%s", c, pkg, f)
			}
		}
	}
	if !found {
		t.Errorf("%s: -bench %s names no Benchmark function of %v", c, pattern, pkgs)
	}
}

// benchArgs reads a go test command line (from its third word): the
// packages, the -bench pattern and the names of the flags it passes to
// the test binary.
func benchArgs(args []string) (pkgs []string, pattern string, flags []string) {
	for i := 2; i < len(args); i++ {
		a := args[i]
		name, value, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		hasValue := !inline && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !strings.HasPrefix(args[i+1], "./")
		switch {
		case !strings.HasPrefix(a, "-"):
			pkgs = append(pkgs, a)
		case name == "bench":
			if !inline && i+1 < len(args) {
				i++
				value = args[i]
			}
			pattern = value
		case goTestFlags[name]:
			if goTestValueFlags[name] && !inline {
				i++
			}
		default:
			flags = append(flags, name)
			if hasValue {
				i++
			}
		}
	}
	return pkgs, pattern, flags
}

// goTestFlags are go test's own flags (after -test. is removed from a
// test binary's); goTestValueFlags take a value.
var (
	goTestFlags = map[string]bool{"run": true, "benchtime": true, "count": true, "timeout": true, "cpuprofile": true,
		"memprofile": true, "race": true, "v": true, "benchmem": true, "short": true, "cpu": true}
	goTestValueFlags = map[string]bool{"run": true, "benchtime": true, "count": true, "timeout": true, "cpuprofile": true,
		"memprofile": true, "cpu": true}
)

// testSymbols returns the Benchmark functions of the package's test files
// (without the prefix) and the flag names they define with the flag
// package.
func testSymbols(t *testing.T, dir string) (benches, flags []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Errorf("%s: no test files (%v)", dir, err)
		return nil, nil
	}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if strings.HasPrefix(n.Name.Name, "Benchmark") && n.Recv == nil {
					benches = append(benches, n.Name.Name)
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, isID := sel.X.(*ast.Ident); isID && id.Name == "flag" && len(n.Args) > 0 {
					lit, isLit := n.Args[0].(*ast.BasicLit)
					if strings.HasSuffix(sel.Sel.Name, "Var") && len(n.Args) > 1 {
						lit, isLit = n.Args[1].(*ast.BasicLit)
					}
					if isLit && lit.Kind == token.STRING {
						flags = append(flags, strings.Trim(lit.Value, "`\""))
					}
				}
			}
			return true
		})
	}
	return benches, flags
}

// docPVE is a page's Proxmox VE fake: TLS, one node, and an Image Factory
// stand-in that serves every nocloud image.
type docPVE struct {
	srv  *pvefake.Server
	bare string
}

type docFactory struct{}

func (docFactory) Download(_ context.Context, url string, _ bool) (io.ReadCloser, error) {
	if !strings.Contains(url, "/nocloud-amd64.") {
		return nil, fmt.Errorf("cannot download %s: 404 Not Found", url)
	}
	return io.NopCloser(bytes.NewReader(make([]byte, 64<<10))), nil
}

func (w *docWorld) fake() *docPVE {
	if w.pve == nil {
		srv := pvefake.NewServer(w.t, pvefake.WithTLS(), pvefake.WithNodes("pve1"), pvefake.WithDownloader(docFactory{}))
		w.pve = &docPVE{srv: srv, bare: strings.TrimSuffix(srv.URL, "/api2/json")}
	}
	return w.pve
}

// prepareSDN makes the fake's node pve1 what docs/operator-guide.md asks
// of a node before the SDN path: vmbr0 VLAN-aware, bridge-vids 2-4094, MTU
// 9000.
func (w *docWorld) prepareSDN() {
	err := w.pve.srv.SetInterface("pve1", pvefake.Interface{Name: "vmbr0", Type: "bridge", Ports: "eno1", VLANAware: true,
		VIDs: "2-4094", MTU: 9000})
	if err != nil {
		w.t.Fatal(err)
	}
}

// prepareLive makes the fake hold what the command assumes: the token it
// names (root@pam's tokens are root; others get Administrator on /, as an
// operator's would), its secret in --token-secret-file, the CA in
// --ca-file, and the storages and guests of --tenants.
func (w *docWorld) prepareLive(args []string) {
	t, srv := w.t, w.pve.srv
	t.Helper()
	if id := flagValue(args, "--token-id"); id != "" {
		user, name, _ := strings.Cut(id, "!")
		if _, ok := srv.TokenSecret(id); !ok {
			if user != "root@pam" {
				_ = srv.AddUser(user, pvefake.UserSpec{})
			}
			if _, err := srv.AddToken(user, name, pvefake.TokenSpec{Secret: "docs-" + name}); err != nil {
				t.Fatalf("token %s: %v", id, err)
			}
			if user != "root@pam" {
				if err := srv.SetACL("/", pveacl.KindUser, user, true, "Administrator"); err != nil {
					t.Fatal(err)
				}
			}
		}
		secret, _ := srv.TokenSecret(id)
		if f := flagValue(args, "--token-secret-file"); f != "" {
			w.write(f, secret+"\n")
		}
	}
	if f := flagValue(args, "--ca-file"); f != "" {
		w.write(f, string(srv.CertificatePEM()))
	}
	// The nodes a command names with --nodes are the cluster's.
	for _, n := range strings.Split(flagValue(args, "--nodes"), ",") {
		if n == "" {
			continue
		}
		if err := srv.AddNode(n); err != nil && !strings.Contains(err.Error(), "it exists") {
			t.Fatalf("node %s: %v", n, err)
		}
	}
	if f := flagValue(args, "--tenants"); f != "" {
		w.prepareTenants(f)
	}
}

// prepareTenants adds the storages and guests the tenants file names.
func (w *docWorld) prepareTenants(file string) {
	t, srv := w.t, w.pve.srv
	b, err := os.ReadFile(filepath.Join(w.dir, file))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := tenantplan.LoadTenants(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, tn := range spec.Tenants {
		for _, s := range append([]string{tn.Storage}, tn.Storages...) {
			_ = srv.AddStorage(pvefake.StorageSpec{ID: s, Type: "lvmthin", Content: []string{"images"}})
		}
		for _, id := range tn.VMs {
			_ = srv.AddVM(pvefake.VMSpec{VMID: id, Node: "pve1", Name: fmt.Sprintf("vm-%d", id)})
		}
	}
	for _, s := range spec.Platform.SharedStorages {
		_ = srv.AddStorage(pvefake.StorageSpec{ID: s, Shared: true, Content: []string{"images", "iso", "import"}})
	}
}

var inlineCommand = regexp.MustCompile("`pxsubstrate ([^`]+)`")

// TestDocSynopses: every command the pages name in running text
// (`pxsubstrate acl perms --user-cfg F ...`) is a command of the tree, and
// every flag it shows is one of that command's flags.
func TestDocSynopses(t *testing.T) {
	root := NewRoot(&App{})
	root.InitDefaultCompletionCmd()
	n := 0
	for _, page := range docPages(t) {
		b, err := os.ReadFile(filepath.Join(repoRoot, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range inlineCommand.FindAllStringSubmatch(string(b), -1) {
			fields := strings.Fields(strings.NewReplacer(`\|`, " ", "[", " ", "]", " ", "(", " ", ")", " ").Replace(m[1]))
			cmd, _, err := root.Find(fields)
			if err != nil || cmd == root {
				if !regexp.MustCompile(`^(tenant|platform) `).MatchString(m[1]) { // owner comments, not commands
					t.Errorf("%s: `pxsubstrate %s` names no command", page, m[1])
				}
				continue
			}
			n++
			for _, f := range fields {
				name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
				switch {
				case !strings.HasPrefix(f, "--"):
				case cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil:
					t.Errorf("%s: `pxsubstrate %s`: %s has no flag %s", page, m[1], cmd.CommandPath(), f)
				}
			}
		}
	}
	if n < 30 {
		t.Errorf("found %d commands in running text; the reader is broken", n)
	}
}
