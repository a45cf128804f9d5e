package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// printArgs are `template print 9000 local-lvm` with the chart-default
// spec, then extra.
func printArgs(extra ...string) []string {
	return append([]string{"template", "print", "9000", "local-lvm", "--talos-version", "v1.13.6", "--schematic-id", guestAgentID}, extra...)
}

func TestTemplatePrintPerNode(t *testing.T) {
	out, errOut, code := run(t, printArgs("--per-node", "--nodes", "pve2,pve1", "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		Templates []struct {
			VMID int      `json:"vmid"`
			Node string   `json:"node"`
			Tags []string `json:"tags"`
		} `json:"templates"`
		Program, PoolSnippet string
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Templates) != 2 || res.Templates[0].VMID != 9000 || res.Templates[0].Node != "pve1" || res.Templates[1].VMID != 9001 || res.Templates[1].Node != "pve2" ||
		strings.Join(res.Templates[1].Tags, ";") != "cozystack;node-pve2;schematic-ce4c9805;talos;talos-v1.13.6" {
		t.Errorf("the templates of pve1 and pve2 in name order: %+v", res.Templates)
	}
	if !strings.Contains(res.Program, "'pve2') VMID=9001 TAGS='cozystack;node-pve2;schematic-ce4c9805;talos;talos-v1.13.6' ;;") ||
		!strings.Contains(res.PoolSnippet, "  localTemplates: true\n") || !strings.Contains(res.PoolSnippet, "  allowedNodes:\n    - \"pve1\"\n    - \"pve2\"\n") {
		t.Errorf("program and snippet:\n%s\n%s", res.Program, res.PoolSnippet)
	}
	refusals := map[string]struct {
		args []string
		code int
		want string
	}{
		"NoNodes":        {args: printArgs("--per-node"), code: 2, want: "--per-node: print mode reads nothing from the cluster, so name the nodes with --nodes pve1,pve2,..."},
		"NodesAlone":     {args: printArgs("--nodes", "pve1"), code: 2, want: "--nodes names the nodes of --per-node: add --per-node, or drop --nodes"},
		"BadNode":        {args: printArgs("--per-node", "--nodes", "pve1,pve_2"), code: 1, want: "--nodes: node pve_2 is not a Proxmox VE node name"},
		"TwiceNode":      {args: printArgs("--per-node", "--nodes", "pve1,PVE1"), code: 1, want: "--nodes: node PVE1 is listed twice"},
		"NodeTagInTags":  {args: printArgs("--tags", "talos,node-pve1"), code: 1, want: "template tag node-pve1 is a node tag, which only a template of one node's local storage carries"},
		"VMIDsOverflow":  {args: []string{"template", "print", "999999999", "local-lvm", "--talos-version", "v1.13.6", "--schematic-id", guestAgentID, "--per-node", "--nodes", "a,b"}, code: 1, want: "VMID: the 2 templates take the VMIDs 999999999 to 1000000000"},
		"CreateNodeFlag": {args: []string{"template", "create", "9000", "local-lvm", "--per-node", "--node", "pve1", "--talos-version", "v1.13.6", "--schematic-id", guestAgentID, "--url", "https://127.0.0.1:1", "--token-id", "a@pve!b", "--token-secret", "x"}, code: 2, want: "--node: with --per-node each template is built on its own node; name the nodes with --nodes"},
	}
	for name, tc := range refusals {
		_, errOut, code := run(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr %s; want %d and %q", name, code, errOut, tc.code, tc.want)
		}
	}
}

// localPool is rotationPool's pool with six workers on local templates
// of pve1-pve3.
func localPool(v string) string {
	return strings.NewReplacer("replicas: 2", "replicas: 6",
		"    network: {bridge: vmbr1}", "    localTemplates: true\n    allowedNodes: [pve1, pve2, pve3]\n    network: {bridge: vmbr1}").Replace(rotationPool(v))
}

// machineTemplateNames renders pool and returns its ProxmoxMachineTemplate names.
func machineTemplateNames(t *testing.T, pool string) []string {
	t.Helper()
	out, errOut, code := runIn(t, pool, "render", "nodes", "-f", "-", "-o", "name")
	if code != 0 {
		t.Fatalf("render nodes: exit %d: %s", code, errOut)
	}
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(strings.ToLower(l), "proxmoxmachinetemplate.infrastructure.cluster.x-k8s.io/"); ok {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		t.Fatalf("no ProxmoxMachineTemplate in:\n%s", out)
	}
	return names
}

// TestTemplateCreatePerNode builds the templates of each node of a
// three-node cluster (nodes from the cluster), each on its node's
// local-lvm, then rotates them: the next Talos release's three templates
// beside the old ones, and the pool rendered on the new tags rolls every
// node's MachineDeployment onto a new machine template.
func TestTemplateCreatePerNode(t *testing.T) {
	e := newTplEnv(t, pvefake.WithNodes("pve1", "pve2", "pve3"))
	out, errOut, code := run(t, e.createArgs("9000", "--per-node")...)
	if code != 0 {
		t.Fatalf("create --per-node: exit %d\n%s", code, errOut)
	}
	for i, node := range []string{"pve1", "pve2", "pve3"} {
		conf, at, ok := e.srv.VMConfig(9000 + i)
		if !ok || at != node || conf["template"] != "1" || conf["tags"] != "cozystack;node-"+node+";schematic-ce4c9805;talos;talos-v1.13.6" ||
			!strings.HasPrefix(conf["scsi0"], "local-lvm:base-") {
			t.Errorf("template %d is on %s with its node tag: on %s, %v", 9000+i, node, at, conf)
		}
	}
	if !strings.Contains(out, "Template 9002 (talos-v1.13.6-ce4c9805) is ready on node pve3") || !strings.Contains(out, "  localTemplates: true\n") {
		t.Errorf("stdout:\n%s", out)
	}
	old := machineTemplateNames(t, localPool("v1.13.6"))
	if _, errOut, code := run(t, append(e.createArgs("9010", "--per-node", "--nodes", "pve3,pve2,pve1"), "--talos-version", "v1.13.7")...); code != 0 {
		t.Fatalf("the rotation's templates: exit %d\n%s", code, errOut)
	}
	if conf, at, _ := e.srv.VMConfig(9012); at != "pve3" || conf["tags"] != "cozystack;node-pve3;schematic-ce4c9805;talos;talos-v1.13.7" {
		t.Errorf("the new template of pve3: on %s, tags %q", at, conf["tags"])
	}
	next := machineTemplateNames(t, localPool("v1.13.7"))
	if len(old) != 3 || len(next) != 3 {
		t.Fatalf("one machine template per node: %v, %v", old, next)
	}
	for i := range old {
		if old[i] == next[i] || !strings.Contains(next[i], []string{"-pve1-", "-pve2-", "-pve3-"}[i]) {
			t.Errorf("node %d's machine template must change with the rotation: %s, %s", i+1, old[i], next[i])
		}
	}
	if _, errOut, code := run(t, e.createArgs("9020", "--per-node")...); code != 1 || !strings.Contains(errOut, "the template of node pve1: ") ||
		!strings.Contains(errOut, "a template already carries the tags cozystack;node-pve1;schematic-ce4c9805;talos;talos-v1.13.6: 9000") {
		t.Errorf("the same templates again are refused by their node's tag set: exit %d\n%s", code, errOut)
	}
}

func TestTemplateSelectPerNode(t *testing.T) {
	const guests = `[{"vmid":9000,"name":"t","node":"pve1","template":1,"tags":"cozystack;node-pve1;talos"},
{"vmid":9001,"name":"t","node":"pve2","template":1,"tags":"cozystack;node-pve2;talos"},
{"vmid":9002,"name":"t","node":"pve2","template":1,"tags":"cozystack;node-pve3;talos"}]`
	out, errOut, code := runIn(t, guests, "template", "select", "--tags", "cozystack,talos", "--resources", "-", "--per-node", "--nodes", "pve1,pve2")
	if code != 0 || !strings.Contains(out, "pve1  cozystack;node-pve1;talos  9000 (t)  pve1") || !strings.Contains(out, "pve2  cozystack;node-pve2;talos  9001 (t)  pve2") {
		t.Errorf("pve1 and pve2 clone their own: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runIn(t, guests, "template", "select", "--tags", "cozystack,talos", "--resources", "-", "--per-node", "--nodes", "pve1,pve3")
	if code != 1 || !strings.Contains(out, "Node pve3:") || !strings.Contains(out, "template 9002 (t) carries the tag of node pve3 but sits on node pve2") ||
		!strings.Contains(errOut, "node pve3: the selected template sits on another node") {
		t.Errorf("pve3's template on pve2 is refused: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = runIn(t, guests, "template", "select", "--tags", "cozystack,talos", "--resources", "-")
	if code != 1 || !strings.Contains(out, "they are the templates") || strings.Contains(out, "add them to templateTags") {
		t.Errorf("the shared tags alone: exit %d\n%s", code, out)
	}
	if _, errOut, code := runIn(t, guests, "template", "select", "--tags", "cozystack,talos", "--resources", "-", "--nodes", "pve1"); code != 2 || !strings.Contains(errOut, "--nodes names the nodes of --per-node") {
		t.Errorf("--nodes alone: exit %d %s", code, errOut)
	}
}
