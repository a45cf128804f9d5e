package lab_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
	"github.com/pxsubstrate/pxsubstrate/pveacl/tenantplan"
	"github.com/pxsubstrate/pxsubstrate/talostemplate"
)

// The lab's Talos image (its template 9000 is made from it): the tests'
// further templates are made from it too.
const (
	labTalosVersion = "v1.13.6"
	labSchematic    = "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515"
)

// selectorTemplates are the templates TestCapmoxTemplateMatchPolicies puts
// beside the lab's 9000, made as an operator makes one (talostemplate.Create
// on pve1's local-lvm), with overlapping tag sets. PVE lists guests by VMID
// compared as strings, so 10001 and 10002 come before every 9xxx: 10001
// (two tags beyond lab;m-x) is listed before 9201 (one beyond), and 10002
// (one beyond lab;m-p) before 9202 (two beyond).
var selectorTemplates = []struct {
	vmid int
	tags string
}{
	{9101, "lab,m-a"},
	{9102, "lab,m-a,m-b"},
	{9103, "lab,m-a,m-b,m-c"},
	{9201, "lab,m-x,m-y"},
	{10001, "lab,m-x,m-y,m-z"},
	{9202, "lab,m-p,m-q,m-r"},
	{10002, "lab,m-p,m-q"},
}

// selectorCase is one pool: its templateTags, the matchPolicy set on its
// rendered ProxmoxMachineTemplate, and the template capmox v0.9.0 clones
// (0: none, refused with "found <count> VM templates").
type selectorCase struct {
	group  string
	tags   []string
	policy talostemplate.MatchPolicy
	want   int
	count  int
}

var selectorCases = []selectorCase{
	{"exact-one", []string{"lab", "m-a"}, talostemplate.MatchExact, 9101, 1},
	{"exact-none", []string{"lab", "m-b"}, talostemplate.MatchExact, 0, 0},
	{"unique-one", []string{"M-C", "lab"}, talostemplate.MatchUniqueSubset, 9103, 1},
	{"unique-two", []string{"lab", "m-b"}, talostemplate.MatchUniqueSubset, 0, 2},
	{"best-one", []string{"lab", "m-b"}, talostemplate.MatchBestSubset, 9102, 1},
	// The worse template is listed first: capmox counts it, then counts the
	// better one without forgetting the first, and refuses both.
	{"best-worse-first", []string{"lab", "m-x"}, talostemplate.MatchBestSubset, 0, 2},
	// The better template is listed first: the worse one is not counted.
	{"best-better-first", []string{"lab", "m-p"}, talostemplate.MatchBestSubset, 10002, 1},
}

// TestCapmoxTemplateMatchPolicies: talostemplate.Select, over the guests
// the tenant's capmox token lists (GET /cluster/resources?type=vm), names
// the template the real capmox v0.9.0 clones for each matchPolicy, and
// where Select refuses with a *NotFoundError capmox clones nothing and
// reports that error's very text on the ProxmoxMachine. One lab: each
// case is a one-worker pool of one cluster, rendered by us, whose
// ProxmoxMachineTemplate gets the case's templateSelector.matchPolicy
// before it is created (our render writes none: exact).
func TestCapmoxTemplateMatchPolicies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A lab of its own: its templates carry the lab template's tags and
	// more, so capmox's one-match selection for any other tenant would
	// find several.
	l := startLab(t, "")
	var vmids []int
	for _, tp := range selectorTemplates {
		createTemplate(t, l, tp.vmid, "local-lvm", pvelab.Nodes[0], tp.tags)
		vmids = append(vmids, tp.vmid)
	}
	tn := readTenant(t)
	base := tn.Pools[0]
	tn.Pools = nil
	groups := map[string]selectorCase{}
	for _, c := range selectorCases {
		p := base
		p.Name = tn.Cluster.Name + "-" + c.group
		p.Spec.Replicas = ptrTo(int32(1))
		p.Spec.Proxmox.TemplateTags = c.tags
		tn.Pools = append(tn.Pools, p)
		groups[capmoxrender.ReleaseName(tn.Cluster.Name)+"-"+c.group] = c
	}
	tn.Plan = func(p *tenantplan.Tenant) { p.Templates = append(p.Templates, vmids...) }
	tn.Mutate = func(u *unstructured.Unstructured) error {
		if u.GetKind() != "ProxmoxMachineTemplate" {
			return nil
		}
		c, ok := groups[u.GetName()[:strings.LastIndex(u.GetName(), "-")]]
		if !ok {
			return fmt.Errorf("ProxmoxMachineTemplate %s is of no case", u.GetName())
		}
		return unstructured.SetNestedField(u.Object, string(c.policy), "spec", "template", "spec", "templateSelector", "matchPolicy")
	}
	a, err := l.ApplyACLs(ctx, &tn)
	if err != nil {
		t.Fatal(err)
	}
	// What capmox will see: the guests its token lists.
	listing, err := talostemplate.LiveResources{Client: tenantClient(t, l, a)}.ListVMResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := make([]int, 0, len(listing))
	for _, r := range listing {
		listed = append(listed, r.VMID)
	}
	t.Logf("the tenant's token lists %v", listed)
	selected := map[string]talostemplate.Selection{}
	refusal := map[string]string{}
	for _, c := range selectorCases {
		sel, err := talostemplate.Select(listing, c.tags, talostemplate.SelectOptions{Capmox: talostemplate.CapmoxV08, Policy: c.policy})
		var nf *talostemplate.NotFoundError
		switch {
		case err == nil:
		case errors.As(err, &nf):
			refusal[c.group] = err.Error()
		default:
			t.Fatalf("%s: %v", c.group, err)
		}
		selected[c.group] = sel
		if got := selectedVMID(sel); got != c.want || sel.Count != c.count {
			t.Errorf("%s: Select picks %d of %d counted, want %d of %d (%v)", c.group, got, sel.Count, c.want, c.count, err)
		}
	}
	if err := l.ApplyObjects(ctx, tn, a); err != nil {
		t.Fatal(err)
	}
	// Wait until capmox has cloned for, or refused, every case.
	var machines map[string]proxmoxMachine
	eventually(t, 3*time.Minute, "capmox clones or refuses for every pool", func() (bool, string) {
		machines = proxmoxMachines(t, l, "tenant-demo")
		var pending []string
		for _, c := range selectorCases {
			pm, ok := machines[c.group]
			if !ok || (pm.vmid == 0 && !strings.Contains(pm.messages, talostemplate.ErrTemplateNotFound.Error())) {
				pending = append(pending, fmt.Sprintf("%s: %+v", c.group, pm))
			}
		}
		return len(pending) == 0, strings.Join(pending, "\n") + "\n" + l.Managers.Capmox.Tail(20)
	})
	for _, c := range selectorCases {
		pm := machines[c.group]
		if want := refusal[c.group]; want != "" && !strings.Contains(pm.messages, want) {
			t.Errorf("%s: Select refuses with %q; capmox reports %s", c.group, want, pm.messages)
		}
	}
	// Each clone is a POST to its template's clone path, answered 200, and
	// a qmclone task on the template ("creating a clone of VM <template>
	// with ID <new>", as qemu-server logs it).
	clonePosts := map[int]int{}
	for _, r := range l.PVE.Requests() {
		if m := cloneRe.FindStringSubmatch(r.Path); m != nil && r.Method == "POST" {
			if r.Status != 200 {
				t.Errorf("clone %s answered %d", r.Path, r.Status)
			}
			src, _ := strconv.Atoi(m[1])
			clonePosts[src]++
		}
	}
	cloneOf := clonesByVM(l)
	// klog quotes the error as Go does.
	log := l.Managers.Capmox.ReadOutput()
	wantPosts := map[int]int{}
	for _, c := range selectorCases {
		pm := machines[c.group]
		want := selectedVMID(selected[c.group])
		if want == 0 {
			if pm.vmid != 0 {
				t.Errorf("%s: Select refuses (%s), yet capmox made VM %d", c.group, refusal[c.group], pm.vmid)
			}
			if q := strconv.Quote(refusal[c.group]); !strings.Contains(log, q[1:len(q)-1]) {
				t.Errorf("%s: capmox's log lacks %s", c.group, q)
			}
			continue
		}
		wantPosts[want]++
		if _, _, ok := l.PVE.VMConfig(pm.vmid); !ok {
			t.Errorf("%s: Select picks %d, but capmox made no VM (VM %d; %s)", c.group, want, pm.vmid, pm.messages)
		} else if cloneOf[pm.vmid] != want {
			t.Errorf("%s: Select picks %d, but capmox cloned VM %d from %d", c.group, want, pm.vmid, cloneOf[pm.vmid])
		}
	}
	if fmt.Sprint(clonePosts) != fmt.Sprint(wantPosts) {
		t.Errorf("clone requests by template %v, want %v (Select's picks)", clonePosts, wantPosts)
	}
	if d, u := l.PVE.Denied(), l.PVE.Unserved(); len(d)+len(u) > 0 {
		t.Errorf("denied %v, unserved %v", d, u)
	}
}

var cloneRe = regexp.MustCompile(`/nodes/[^/]+/qemu/([0-9]+)/clone$`)

func selectedVMID(s talostemplate.Selection) int {
	if s.Template == nil {
		return 0
	}
	return s.Template.VMID
}

// createTemplate makes a Talos template of the lab's image as an operator
// does, with talostemplate.Create and the root token.
func createTemplate(t *testing.T, l *lab.Lab, vmid int, storage, node, tags string) {
	t.Helper()
	spec, err := talostemplate.NewSpec(talostemplate.Inputs{VMID: strconv.Itoa(vmid), Storage: storage,
		TalosVersion: labTalosVersion, SchematicID: labSchematic, Tags: tags})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := talostemplate.Create(context.Background(), l.PVE.Client(), spec,
		talostemplate.CreateOptions{Node: node, PollInterval: 10 * time.Millisecond}); err != nil {
		t.Fatalf("cannot create template %d: %v", vmid, err)
	}
}

// tenantClient is a client of the fake with the tenant's capmox token, as
// capmox reads it from the credentials Secret.
func tenantClient(t *testing.T, l *lab.Lab, a *lab.Applied) *proxmox.Client {
	t.Helper()
	return tokenClientIn(t, l, "tenant-demo", a.TokenID)
}

// proxmoxMachine is what a test reads of a ProxmoxMachine: its VM, its
// conditions (type/reason: message, one a line), its Machine, and whether
// it is being deleted.
type proxmoxMachine struct {
	name     string
	group    string
	vmid     int
	node     string
	messages string
	machine  string
	deleting bool
}

// proxmoxMachines reads the ProxmoxMachines of ns by the group of their
// MachineDeployment (kubernetes-<cluster>-<group>), one of each.
func proxmoxMachines(t *testing.T, l *lab.Lab, ns string) map[string]proxmoxMachine {
	t.Helper()
	out := map[string]proxmoxMachine{}
	for group, pms := range proxmoxMachinesAll(t, l, ns) {
		out[group] = pms[0]
	}
	return out
}

// proxmoxMachinesAll reads the ProxmoxMachines of ns by group.
func proxmoxMachinesAll(t *testing.T, l *lab.Lab, ns string) map[string][]proxmoxMachine {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(l.InfrastructureAPIVersion())
	list.SetKind("ProxmoxMachineList")
	must(t, l.Client.List(context.Background(), list, client.InNamespace(ns)))
	out := map[string][]proxmoxMachine{}
	for _, pm := range list.Items {
		md := pm.GetLabels()[capmoxrender.LabelDeploymentName]
		_, group, _ := strings.Cut(strings.TrimPrefix(md, "kubernetes-"), "-")
		vmid, _, _ := unstructured.NestedInt64(pm.Object, "spec", "virtualMachineID")
		node, _, _ := unstructured.NestedString(pm.Object, "status", "proxmoxNode")
		conds, _, _ := unstructured.NestedSlice(pm.Object, "status", "conditions")
		var msgs []string
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok {
				msgs = append(msgs, fmt.Sprintf("%s/%v: %v", m["type"], m["reason"], m["message"]))
			}
		}
		r := proxmoxMachine{name: pm.GetName(), group: group, vmid: int(vmid), node: node, messages: strings.Join(msgs, "\n"), deleting: pm.GetDeletionTimestamp() != nil}
		for _, o := range pm.GetOwnerReferences() {
			if o.Kind == "Machine" {
				r.machine = o.Name
			}
		}
		out[group] = append(out[group], r)
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
