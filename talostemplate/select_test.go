package talostemplate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func tmpl(vmid int, node, tags string) VMResource {
	return VMResource{VMID: vmid, Name: "t" + strings.Repeat("x", vmid%3), Node: node, Template: 1, Tags: tags, Type: "qemu"}
}

func vm(vmid int, node, tags string) VMResource {
	return VMResource{VMID: vmid, Name: "vm", Node: node, Tags: tags, Type: "qemu"}
}

var selector = []string{"cozystack", "talos", "talos-v1.13.6"}

func TestSelect(t *testing.T) {
	type want struct {
		vmid int    // chosen template, 0 for none
		err  string // capmox's error text, "" for none
	}
	cases := map[string]struct {
		reason    string
		resources []VMResource
		selector  []string
		opts      SelectOptions
		want      want
	}{
		"ExactOne": {
			reason:    "the one template with exactly the selector's tags",
			resources: []VMResource{vm(100, "pve1", "cozystack;talos;talos-v1.13.6"), tmpl(9000, "pve1", "talos-v1.13.6;cozystack;talos"), tmpl(9001, "pve2", "cozystack;talos;talos-v1.13.5")},
			selector:  selector, want: want{vmid: 9000},
		},
		"ExtraTagV07": {
			reason:    "set equality, not containment: one extra tag and nothing matches",
			resources: []VMResource{tmpl(9000, "pve1", "capmox-template;cozystack;talos;talos-v1.13.6")},
			selector:  selector, want: want{err: `VM template not found: found 0 VM templates with tags "cozystack;talos;talos-v1.13.6"`},
		},
		"ExtraTagUniqueSubset": {
			reason:    "v0.8 uniqueSubset accepts a superset",
			resources: []VMResource{tmpl(9000, "pve1", "capmox-template;cozystack;talos;talos-v1.13.6")},
			selector:  selector, opts: SelectOptions{Capmox: CapmoxV08, Policy: MatchUniqueSubset}, want: want{vmid: 9000},
		},
		"V07PrintsTheSelectorAsGiven": {
			reason:    "v0.7 quotes the original selector tags joined with ';'",
			resources: nil, selector: []string{"Talos", "cozystack", "talos", "talos-v1.13.6"},
			want: want{err: `VM template not found: found 0 VM templates with tags "Talos;cozystack;talos;talos-v1.13.6"`},
		},
		"V08PrintsTheNormalisedSelector": {
			reason:    "v0.8 quotes the normalised selector",
			resources: nil, selector: []string{"Talos", "cozystack", "talos", "talos-v1.13.6"}, opts: SelectOptions{Capmox: CapmoxV08},
			want: want{err: `VM template not found: found 0 VM templates with tags "cozystack;talos;talos-v1.13.6"`},
		},
		"UpperCaseTemplateV07": {
			reason:    "v0.7 does not lower-case the template's tags",
			resources: []VMResource{tmpl(9000, "pve1", "COZYSTACK;talos;talos-v1.13.6")},
			selector:  selector, want: want{err: `VM template not found: found 0 VM templates with tags "cozystack;talos;talos-v1.13.6"`},
		},
		"UpperCaseTemplateV08": {
			reason:    "v0.8 lower-cases them",
			resources: []VMResource{tmpl(9000, "pve1", "COZYSTACK;talos;talos-v1.13.6")},
			selector:  selector, opts: SelectOptions{Capmox: CapmoxV08}, want: want{vmid: 9000},
		},
		"DuplicateV07": {
			reason:    "v0.7 does not de-duplicate the template's tags",
			resources: []VMResource{tmpl(9000, "pve1", "cozystack;talos;talos;talos-v1.13.6")},
			selector:  selector, want: want{err: `VM template not found: found 0 VM templates with tags "cozystack;talos;talos-v1.13.6"`},
		},
		"DuplicateV08": {
			reason:    "v0.8 reads them as a set",
			resources: []VMResource{tmpl(9000, "pve1", "cozystack;talos;talos;talos-v1.13.6")},
			selector:  selector, opts: SelectOptions{Capmox: CapmoxV08}, want: want{vmid: 9000},
		},
		"SpacesV07": {
			reason:    "v0.7 does not trim",
			resources: []VMResource{tmpl(9000, "pve1", "cozystack; talos;talos-v1.13.6")},
			selector:  selector, want: want{err: `VM template not found: found 0 VM templates with tags "cozystack;talos;talos-v1.13.6"`},
		},
		"SpacesV08": {
			reason:    "v0.8 trims",
			resources: []VMResource{tmpl(9000, "pve1", "cozystack; talos;talos-v1.13.6")},
			selector:  selector, opts: SelectOptions{Capmox: CapmoxV08}, want: want{vmid: 9000},
		},
		"EmptyPartV08": {
			reason:    "an empty entry is an extra tag to v0.8's exact policy",
			resources: []VMResource{tmpl(9000, "pve1", "cozystack;;talos;talos-v1.13.6")},
			selector:  selector, opts: SelectOptions{Capmox: CapmoxV08}, want: want{err: `VM template not found: found 0 VM templates with tags "cozystack;talos;talos-v1.13.6"`},
		},
		"Commas": {
			reason:    "tags written with commas are one tag to capmox",
			resources: []VMResource{tmpl(9000, "pve1", "cozystack,talos,talos-v1.13.6")},
			selector:  selector, opts: SelectOptions{Capmox: CapmoxV08}, want: want{err: `VM template not found: found 0 VM templates with tags "cozystack;talos;talos-v1.13.6"`},
		},
		"TwoTemplates": {
			reason:    "one tag set on two templates: capmox needs exactly one",
			resources: []VMResource{tmpl(9000, "pve1", "cozystack;talos;talos-v1.13.6"), tmpl(9100, "pve2", "talos;cozystack;talos-v1.13.6")},
			selector:  selector, want: want{err: `VM template not found: found 2 VM templates with tags "cozystack;talos;talos-v1.13.6"`},
		},
		"NotATemplate": {
			reason:    "a VM with the tags is not a template",
			resources: []VMResource{vm(100, "pve1", "cozystack;talos;talos-v1.13.6")},
			selector:  selector, want: want{err: `VM template not found: found 0 VM templates with tags "cozystack;talos;talos-v1.13.6"`},
		},
		"UntaggedTemplate": {
			reason:    "untagged templates are skipped, even for an empty selector",
			resources: []VMResource{tmpl(9000, "pve1", "")},
			selector:  nil, opts: SelectOptions{Capmox: CapmoxV08, Policy: MatchUniqueSubset}, want: want{err: `VM template not found: found 0 VM templates with tags ""`},
		},
		"EmptySelectorUniqueSubset": {
			reason:    "an empty selector is a subset of every tagged template",
			resources: []VMResource{tmpl(9000, "pve1", "a"), tmpl(9001, "pve1", "b"), vm(100, "pve1", "c")},
			selector:  nil, opts: SelectOptions{Capmox: CapmoxV08, Policy: MatchUniqueSubset}, want: want{err: `VM template not found: found 2 VM templates with tags ""`},
		},
		"BestSubsetBetterFirst": {
			reason:    "bestSubset: the better candidate first hides the worse one",
			resources: []VMResource{tmpl(9000, "pve1", "cozystack;talos;talos-v1.13.6;x"), tmpl(9001, "pve1", "cozystack;talos;talos-v1.13.6;x;y")},
			selector:  selector, opts: SelectOptions{Capmox: CapmoxV08, Policy: MatchBestSubset}, want: want{vmid: 9000},
		},
		"BestSubsetWorseFirst": {
			reason:    "bestSubset: a worse candidate first still counts, as capmox does not reset its counter",
			resources: []VMResource{tmpl(9001, "pve1", "cozystack;talos;talos-v1.13.6;x;y"), tmpl(9000, "pve1", "cozystack;talos;talos-v1.13.6;x")},
			selector:  selector, opts: SelectOptions{Capmox: CapmoxV08, Policy: MatchBestSubset}, want: want{err: `VM template not found: found 2 VM templates with tags "cozystack;talos;talos-v1.13.6"`},
		},
		"BestSubsetTie": {
			reason:    "bestSubset: two equally good candidates are two matches",
			resources: []VMResource{tmpl(9000, "pve1", "cozystack;talos;talos-v1.13.6;x"), tmpl(9001, "pve2", "cozystack;talos;talos-v1.13.6;y")},
			selector:  selector, opts: SelectOptions{Capmox: CapmoxV08, Policy: MatchBestSubset}, want: want{err: `VM template not found: found 2 VM templates with tags "cozystack;talos;talos-v1.13.6"`},
		},
		"LXCTemplateCounts": {
			reason:    "capmox lists type=vm, which includes container templates, and does not filter them",
			resources: []VMResource{tmpl(9000, "pve1", "cozystack;talos;talos-v1.13.6"), {VMID: 9001, Type: "lxc", Node: "pve1", Template: 1, Tags: "cozystack;talos;talos-v1.13.6"}},
			selector:  selector, want: want{err: `VM template not found: found 2 VM templates with tags "cozystack;talos;talos-v1.13.6"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sel, err := Select(tc.resources, tc.selector, tc.opts)
			got := want{}
			if sel.Template != nil {
				got.vmid = sel.Template.VMID
			}
			if err != nil {
				var nf *NotFoundError
				if !errors.As(err, &nf) || !errors.Is(err, ErrTemplateNotFound) || nf.Count != sel.Count {
					t.Fatalf("%s: want a *NotFoundError wrapping ErrTemplateNotFound with the count, got %v", tc.reason, err)
				}
				got.err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestSelectOptions(t *testing.T) {
	cases := map[string]struct {
		reason string
		opts   SelectOptions
		err    string
	}{
		"V07Subset":     {reason: "v0.7 has no matchPolicy", opts: SelectOptions{Capmox: CapmoxV07, Policy: MatchUniqueSubset}, err: "cannot simulate match policy uniqueSubset on capmox v0.7"},
		"UnknownCapmox": {reason: "only two release lines", opts: SelectOptions{Capmox: "v1.0"}, err: `cannot simulate capmox "v1.0": use v0.7 or v0.8`},
		"UnknownPolicy": {reason: "only capmox's three policies", opts: SelectOptions{Capmox: CapmoxV08, Policy: "subset"}, err: `cannot simulate match policy "subset"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Select(nil, selector, tc.opts)
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) || errors.Is(err, ErrTemplateNotFound) {
				t.Errorf("%s: got %v, want %q", tc.reason, err, tc.err)
			}
		})
	}
	sel, _ := Select(nil, selector, SelectOptions{})
	if sel.Capmox != CapmoxV07 || sel.Policy != MatchExact {
		t.Errorf("the zero options are capmox v0.7, exact; got %s %s", sel.Capmox, sel.Policy)
	}
}

func TestSelectCandidates(t *testing.T) {
	rs := []VMResource{
		vm(100, "pve1", "cozystack;talos;talos-v1.13.6;web"),
		vm(101, "pve1", "web"),
		tmpl(9000, "pve1", "capmox-template;Cozystack;talos"),
		tmpl(9001, "pve2", ""),
	}
	sel, _ := Select(rs, selector, SelectOptions{})
	want := []Candidate{
		{VMResource: rs[0], Skipped: "not a template"},
		{VMResource: rs[2], Seen: []string{"Cozystack", "capmox-template", "talos"}, Missing: []string{"cozystack", "talos-v1.13.6"}, Extra: []string{"Cozystack", "capmox-template"}},
		{VMResource: rs[3], Skipped: "no tags"},
	}
	if diff := cmp.Diff(want, sel.Candidates); diff != "" {
		t.Errorf("every template, and the non-templates carrying the selector, in listing order: -want +got:\n%s", diff)
	}
}

func TestExplain(t *testing.T) {
	cases := map[string]struct {
		reason    string
		resources []VMResource
		opts      SelectOptions
		want      []string
	}{
		"Chosen": {
			reason:    "the answer names template and node",
			resources: []VMResource{{VMID: 9000, Name: "talos-v1.13.6-ce4c9805", Node: "pve1", Template: 1, Tags: "cozystack;talos;talos-v1.13.6"}},
			want:      []string{"capmox v0.7 clones template 9000 (talos-v1.13.6-ce4c9805) from node pve1"},
		},
		"ExtraAndMissing": {
			reason: "each template says which tags are extra or missing",
			resources: []VMResource{
				{VMID: 9000, Name: "a", Node: "pve1", Template: 1, Tags: "capmox-template;cozystack;talos;talos-v1.13.6"},
				{VMID: 9001, Name: "b", Node: "pve2", Template: 1, Tags: "cozystack;talos"},
			},
			want: []string{
				"capmox v0.7 needs exactly one template for the selector cozystack;talos;talos-v1.13.6 across the whole cluster and counted 0; every template tag must be in the selector and every selector tag on the template (set equality, not containment)",
				`template 9000 (a) on pve1 has the extra tag(s) "capmox-template": add them to templateTags or remove them from the template`,
				`template 9001 (b) on pve2 lacks "talos-v1.13.6"`,
			},
		},
		"Commas": {
			reason:    "comma-separated tags are named as the cause, with the fix",
			resources: []VMResource{{VMID: 9000, Name: "a", Node: "pve1", Template: 1, Tags: "cozystack,talos,talos-v1.13.6"}},
			opts:      SelectOptions{Capmox: CapmoxV08},
			want: []string{
				"capmox v0.8 needs exactly one template for the selector cozystack;talos;talos-v1.13.6 across the whole cluster and counted 0; every template tag must be in the selector and every selector tag on the template (set equality, not containment)",
				`template 9000 (a) on pve1 has its tags separated by commas: PVE separates tags with ';', so capmox reads "cozystack,talos,talos-v1.13.6" as a single tag; set them with qm set 9000 --tags 'cozystack;talos;talos-v1.13.6'`,
			},
		},
		"V07Quirks": {
			reason:    "v0.7's literal reading of the template's tags is spelled out",
			resources: []VMResource{{VMID: 9000, Name: "a", Node: "pve1", Template: 1, Tags: "Cozystack;talos;talos;talos-v1.13.6"}},
			want: []string{
				"capmox v0.7 needs exactly one template for the selector cozystack;talos;talos-v1.13.6 across the whole cluster and counted 0; every template tag must be in the selector and every selector tag on the template (set equality, not containment)",
				`template 9000 (a) on pve1 has the tag "Cozystack" with upper-case letters; capmox v0.7 lower-cases the selector but not the template's tags`,
				`template 9000 (a) on pve1 lists the tag "talos" twice, and capmox v0.7 does not de-duplicate the template's tags`,
				`template 9000 (a) on pve1 lacks "cozystack"`,
				`template 9000 (a) on pve1 has the extra tag(s) "Cozystack": add them to templateTags or remove them from the template`,
			},
		},
		"TwoOnTwoNodes": {
			reason: "one tag set on two templates, one per node",
			resources: []VMResource{
				{VMID: 9000, Name: "a", Node: "pve1", Template: 1, Tags: "cozystack;talos;talos-v1.13.6"},
				{VMID: 9100, Name: "a", Node: "pve2", Template: 1, Tags: "cozystack;talos;talos-v1.13.6"},
				{VMID: 120, Name: "w", Node: "pve2", Tags: "cozystack;talos;talos-v1.13.6"},
			},
			want: []string{
				"capmox v0.7 needs exactly one template for the selector cozystack;talos;talos-v1.13.6 across the whole cluster and counted 2; every template tag must be in the selector and every selector tag on the template (set equality, not containment)",
				"2 templates match: 9000 (a) on pve1, 9100 (a) on pve2; capmox requires exactly one template for a tag set in the whole cluster, so give each its own tags or remove all but one",
				"each copy sits on its own node, as local storage needs, but capmox resolves the selector cluster-wide: " +
					"build them with template create --per-node, which tags each with its node, and set the pool's proxmox.localTemplates (one MachineDeployment per node selects its node's template), or keep one template on shared storage",
				"VM 120 (w) on pve2 carries the selector's tags but is not a template, and capmox only clones templates (qm template 120 converts it)",
			},
		},
		"BestSubsetOrder": {
			reason: "the bestSubset counter quirk is named",
			resources: []VMResource{
				{VMID: 9001, Name: "b", Node: "pve1", Template: 1, Tags: "cozystack;talos;talos-v1.13.6;x;y"},
				{VMID: 9000, Name: "a", Node: "pve1", Template: 1, Tags: "cozystack;talos;talos-v1.13.6;x"},
			},
			opts: SelectOptions{Capmox: CapmoxV08, Policy: MatchBestSubset},
			want: []string{
				"capmox v0.8 needs exactly one template for the selector cozystack;talos;talos-v1.13.6 across the whole cluster and counted 2; the template must carry every selector tag (bestSubset)",
				"2 templates match: 9001 (b) on pve1, 9000 (a) on pve1; capmox requires exactly one template for a tag set in the whole cluster, so give each its own tags or remove all but one",
				"capmox's bestSubset keeps counting the earlier, worse matches when a better one follows in the listing, so the answer depends on the order PVE lists the guests in",
			},
		},
		"Empty": {
			reason: "a cluster without templates says so",
			want: []string{
				"capmox v0.7 needs exactly one template for the selector cozystack;talos;talos-v1.13.6 across the whole cluster and counted 0; every template tag must be in the selector and every selector tag on the template (set equality, not containment)",
				"the cluster lists no template at all: build one with pxsubstrate template print|create",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sel, _ := Select(tc.resources, selector, tc.opts)
			if diff := cmp.Diff(tc.want, Explain(sel)); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestParseResources(t *testing.T) {
	want := []VMResource{{ID: "qemu/9000", Type: "qemu", VMID: 9000, Name: "t", Node: "pve1", Template: 1, Tags: "a;b"}, {VMID: 100, Node: "pve1"}}
	cases := map[string]struct {
		reason string
		doc    string
		err    string
	}{
		"Array":    {reason: "the data array as pvesh prints it", doc: `[{"id":"qemu/9000","type":"qemu","vmid":9000,"name":"t","node":"pve1","template":1,"tags":"a;b","maxmem":4294967296},{"vmid":100,"node":"pve1","template":0}]`},
		"Envelope": {reason: "the API's whole answer", doc: `{"data":[{"id":"qemu/9000","type":"qemu","vmid":9000,"name":"t","node":"pve1","template":1,"tags":"a;b"},{"vmid":100,"node":"pve1"}]}`},
		"YAML":     {reason: "YAML, booleans for template", doc: "data:\n- {id: qemu/9000, type: qemu, vmid: 9000, name: t, node: pve1, template: true, tags: a;b}\n- {vmid: 100, node: pve1, template: false}\n"},
		"NoData":   {reason: "an object needs its data array", doc: `{"result":[]}`, err: "the object has no data array"},
		"Scalar":   {reason: "a scalar is no list", doc: `42`, err: "want a list of guests"},
		"BadFlag":  {reason: "template is 0 or 1", doc: `[{"vmid":1,"template":2}]`, err: "template is 2: want 0 or 1"},
		"BadYAML":  {reason: "broken YAML", doc: "[", err: "invalid cluster resources"},
		"TwoDocs":  {reason: "a second answer is not read in part", doc: "data: []\n---\ndata: [{vmid: 100, node: pve1}]\n", err: "holds 2 YAML documents"},
		"Leading":  {reason: "empty documents hold nothing", doc: "---\n---\n[{id: qemu/9000, type: qemu, vmid: 9000, name: t, node: pve1, template: 1, tags: a;b}, {vmid: 100, node: pve1}]\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseResources([]byte(tc.doc))
			if tc.err != "" {
				if !errors.Is(err, ErrInvalidResources) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%s: got %v, want %q", tc.reason, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.reason, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCheckTagSetFree(t *testing.T) {
	rs := []VMResource{
		vm(100, "pve1", "cozystack;talos;talos-v1.13.6"),
		tmpl(9000, "pve1", "cozystack;talos;talos-v1.13.6;x"),
		tmpl(9001, "pve2", " Talos;cozystack;;talos-v1.13.6;talos"),
		tmpl(8999, "pve3", "talos-v1.13.6;talos;cozystack"),
	}
	err := CheckTagSetFree(rs, []string{"talos", "cozystack", "talos-v1.13.6"})
	var taken *TagSetTakenError
	if !errors.As(err, &taken) || !errors.Is(err, ErrTagSetTaken) {
		t.Fatalf("want *TagSetTakenError, got %v", err)
	}
	want := "a template already carries the tags cozystack;talos;talos-v1.13.6: 8999 (txx) on pve3, 9001 (tx) on pve2"
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("a VM and a superset do not count; loose equality does: -want +got:\n%s", diff)
	}
	if err := CheckTagSetFree(rs, []string{"cozystack", "talos"}); err != nil {
		t.Errorf("a subset of existing sets is free: %v", err)
	}
}
