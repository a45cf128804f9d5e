package capmoxrender_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// Autoscaler annotations of a MachineDeployment.
const (
	minSizeKey = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
	maxSizeKey = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
)

// localNodes is validNodes with local templates on nodes.
func localNodes(nodes ...string) capmoxrender.KubernetesNodes {
	n := validNodes()
	n.Spec.Proxmox.LocalTemplates = true
	n.Spec.Proxmox.AllowedNodes = nodes
	return n
}

// clusterNodes is a lookup whose Kubernetes tenant-e2e/k8s-e2e lists nodes.
func clusterNodes(nodes ...any) *capmoxrender.Objects {
	k := liveKubernetes("tenant-e2e", "k8s-e2e", "v1.35.2")
	if nodes != nil {
		_ = unstructured.SetNestedSlice(k.Object, nodes, "spec", "proxmox", "allowedNodes")
	}
	l := &capmoxrender.Objects{}
	l.Add(k)
	return l
}

func TestLocalTemplatesRefusals(t *testing.T) {
	type mut = func(*capmoxrender.KubernetesNodes, *capmoxrender.Options)
	i32 := func(v int32) *int32 { return &v }
	cases := map[string]struct {
		reason string
		mutate mut
		want   string
	}{
		"Accepted": {reason: "three named nodes render", mutate: func(*capmoxrender.KubernetesNodes, *capmoxrender.Options) {}},
		"NodeTagListed": {reason: "the render adds each node's tag", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.TemplateTags = append(n.Spec.Proxmox.TemplateTags, "node-pve1")
		}, want: `proxmox.templateTags[2] is "node-pve1", a node tag: with proxmox.localTemplates the render adds each node's tag (node-<node>) to the MachineDeployment of that node; leave it out of templateTags`},
		"NodeTagWithout": {reason: "a node's template cannot serve a pool capmox spreads over the nodes", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.LocalTemplates = false
			n.Spec.Proxmox.TemplateTags = append(n.Spec.Proxmox.TemplateTags, "node-pve2")
		}, want: `proxmox.templateTags[2] is "node-pve2", the tag of a template on one node's local storage: capmox may place a worker on any node and cannot clone that template to another; set proxmox.localTemplates: true and leave the node tag out of templateTags (the render adds each node's)`},
		"GPUs": {reason: "a GPU pool is placed by its mapping", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.GPUs = []capmoxrender.GPU{{Name: "a100"}}
		}, want: "proxmox.localTemplates cannot be combined with gpus: a GPU pool is placed on the nodes whose PCI mapping holds its devices and selects its template by the GPU tag alone; build the GPU template on shared storage, or give the GPUs a pool of their own"},
		"FailureDomains": {reason: "failure domains place the workers by domain, not by node", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.AllowedNodes = nil
			n.Spec.Proxmox.FailureDomains = []capmoxrender.FailureDomain{{Name: "a", Nodes: []string{"pve1"}}, {Name: "b", Nodes: []string{"pve2"}}}
		}, want: "proxmox.localTemplates cannot be combined with proxmox.failureDomains: a failure domain's MachineDeployment lets capmox pick any node of the domain, and a template on one node's local storage cannot be cloned to another; keep one of the two (local templates already give each node a MachineDeployment of its own)"},
		"HA": {reason: "HA moves VMs between nodes", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Proxmox.HA = true },
			want: "proxmox.ha cannot be combined with proxmox.localTemplates: Proxmox VE HA recovers a VM on another node, and a linked clone on one node's local storage cannot start anywhere else; turn one of the two off"},
		"StorageLinked": {reason: "a linked clone stays on the template's storage, local or not", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Proxmox.Storage = "local-zfs" },
			want: "proxmox.storage needs full: true: a target storage is a full-clone parameter, and a linked clone always lives on the template's storage"},
		"FullStorageAccepted": {reason: "a full copy on the template's node onto a storage there works", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.Full, n.Spec.Proxmox.Storage = true, "local-zfs"
		}},
		"NoNodesOffline": {reason: "without a node list nothing says where the templates are", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Proxmox.AllowedNodes = nil },
			want: "proxmox.localTemplates needs the nodes that hold a template: list them in proxmox.allowedNodes, or pass the Kubernetes object tenant-e2e/k8s-e2e (--lookup) whose proxmox.allowedNodes lists them"},
		"NoNodesAnywhere": {reason: "the cluster's empty list means every node, which the render cannot enumerate", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			n.Spec.Proxmox.AllowedNodes, o.Clusters = nil, clusterNodes()
		}, want: "proxmox.localTemplates needs the nodes that hold a template, and neither the pool nor its cluster tenant-e2e/k8s-e2e lists them (an empty proxmox.allowedNodes means every node, which the render cannot enumerate): list them in the pool's proxmox.allowedNodes"},
		"ClusterNodesAccepted": {reason: "the cluster's nodes are the pool's", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			n.Spec.Proxmox.AllowedNodes, o.Clusters = nil, clusterNodes("pve1", "pve2")
		}},
		"ClusterNodeBad": {reason: "a cluster node that is no node name", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			n.Spec.Proxmox.AllowedNodes, o.Clusters = nil, clusterNodes("pve1", "pve_2")
		}, want: `the cluster's proxmox.allowedNodes[1] is "pve_2", which is not a Proxmox node name (letters, digits and hyphens): fix the Kubernetes object tenant-e2e/k8s-e2e, or list the pool's nodes in proxmox.allowedNodes`},
		"CaseTwins": {reason: "two spellings of one node would share a tag and a name", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.AllowedNodes = []string{"pve1", "PVE1"}
		}, want: `proxmox.allowedNodes[1]: nodes "pve1" and "PVE1" differ only in case, and would get one template tag and one MachineDeployment name (node-pve1); list each node once`},
		"NameTooLong": {reason: "each node's objects carry the node in their name", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.AllowedNodes = []string{"pve1", "a-rather-long-proxmox-node-name-xy"}
		}, want: `the objects of this pool would be named "kubernetes-k8s-e2e-md0-a-rather-long-proxmox-node-name-xy-000000" (64 characters), longer than the 63 a Kubernetes label value allows: shorten the cluster or pool name`},
		"FewerThanNodes": {reason: "each node's MachineDeployment needs a worker", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Replicas = i32(2) },
			want: "replicas 2 is fewer than the 3 nodes proxmox.localTemplates spreads the pool over (pve1, pve2, pve3): each node's MachineDeployment needs room for a worker; raise replicas to at least 3, or list fewer nodes in proxmox.allowedNodes"},
		"MaxFewerThanNodes": {reason: "an autoscaled pool too", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.MaxReplicas = i32(1) },
			want: "maxReplicas 1 is fewer than the 3 nodes proxmox.localTemplates spreads the pool over (pve1, pve2, pve3): each node's MachineDeployment needs room for a worker; raise maxReplicas to at least 3, or list fewer nodes in proxmox.allowedNodes"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n, o := localNodes("pve1", "pve2", "pve3"), capmoxrender.Options{}
			tc.mutate(&n, &o)
			_, err := capmoxrender.RenderNodes(context.Background(), n, o)
			checkRefusal(t, tc.reason, err, tc.want)
		})
	}
}

// part is what a test reads of one MachineDeployment of a pool and its
// machine template.
type part struct {
	name, node     string
	min, max       int
	replicas       *int64
	tags           []string
	allowedNodes   []string
	capacity       map[string]string
	deploymentName string
}

// parts reads the MachineDeployments of a render, in output order, each
// with its ProxmoxMachineTemplate's matchTags and allowedNodes.
func parts(t interface{ Fatalf(string, ...any) }, objs []*unstructured.Unstructured) []part {
	pmts := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		if u.GetKind() == capmox.KindProxmoxMachineTemplate {
			pmts[u.GetName()] = u
		}
	}
	var out []part
	for _, u := range objs {
		if u.GetKind() != "MachineDeployment" {
			continue
		}
		a := u.GetAnnotations()
		mn, err1 := strconv.Atoi(a[minSizeKey])
		mx, err2 := strconv.Atoi(a[maxSizeKey])
		if err1 != nil || err2 != nil {
			t.Fatalf("MachineDeployment %s: min/max annotations %q/%q", u.GetName(), a[minSizeKey], a[maxSizeKey])
		}
		p := part{name: u.GetName(), min: mn, max: mx, capacity: map[string]string{}}
		if r, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); ok {
			p.replicas = &r
		}
		for k, v := range a {
			if strings.HasPrefix(k, "capacity.") {
				p.capacity[k] = v
			}
		}
		p.deploymentName, _, _ = unstructured.NestedString(u.Object, "spec", "template", "metadata", "labels", capmox.LabelDeploymentName)
		ref, _, _ := unstructured.NestedString(u.Object, "spec", "template", "spec", "infrastructureRef", "name")
		pmt, ok := pmts[ref]
		if !ok {
			t.Fatalf("MachineDeployment %s names ProxmoxMachineTemplate %q, which the render lacks", u.GetName(), ref)
		}
		p.tags, _, _ = unstructured.NestedStringSlice(pmt.Object, "spec", "template", "spec", "templateSelector", "matchTags")
		p.allowedNodes, _, _ = unstructured.NestedStringSlice(pmt.Object, "spec", "template", "spec", "allowedNodes")
		if len(p.allowedNodes) == 1 {
			p.node = p.allowedNodes[0]
		}
		out = append(out, p)
	}
	return out
}

// TestLocalTemplatesSplit is the property of the expansion: a pool with
// local templates on k nodes renders exactly k MachineDeployments, one per
// node in the nodes' name order, each pinned to its node and selecting the
// pool's tags and the node's tag; the parts' minimum and maximum sum to
// the pool's, each is the pool's divided by k rounded down or up, each
// part's minimum is at most its maximum, a fixed pool's replicas sum to
// its replicas, every part has the pool's capacity annotations (they
// describe one worker), every name is a valid label value, and the render
// does not depend on the order the nodes are listed in. Both generations.
func TestLocalTemplatesSplit(t *testing.T) {
	nodeGen := rapid.StringMatching(`pve[a-z0-9]{0,6}`)
	rapid.Check(t, func(t *rapid.T) {
		nodes := rapid.SliceOfNDistinct(nodeGen, 1, 8, rapid.ID[string]).Draw(t, "nodes")
		k := int32(len(nodes))
		n := localNodes(nodes...)
		fixed := rapid.Bool().Draw(t, "fixed")
		var lo, hi int32
		if fixed {
			hi = rapid.Int32Range(k, 40).Draw(t, "replicas")
			lo = hi
			n.Spec.Replicas = &hi
		} else {
			hi = rapid.Int32Range(k, 40).Draw(t, "maxReplicas")
			lo = rapid.Int32Range(0, hi).Draw(t, "minReplicas")
			n.Spec.MinReplicas, n.Spec.MaxReplicas = &lo, &hi
		}
		gen := rapid.SampledFrom([]capmoxrender.Capmox{capmoxrender.CapmoxV07, capmoxrender.CapmoxV08}).Draw(t, "capmox")
		objs, err := capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{Capmox: gen})
		if err != nil {
			t.Fatal(err)
		}
		ps := parts(t, objs)
		if len(ps) != len(nodes) {
			t.Fatalf("%d MachineDeployments for %d nodes", len(ps), len(nodes))
		}
		sorted := slices.Sorted(slices.Values(nodes))
		var sumMin, sumMax, sumReplicas int
		for i, p := range ps {
			if p.node != sorted[i] || len(p.allowedNodes) != 1 {
				t.Fatalf("part %d: allowedNodes %v, want [%s] (the nodes in name order)", i, p.allowedNodes, sorted[i])
			}
			if want := append(slices.Clone(n.Spec.Proxmox.TemplateTags), capmox.NodeTag(p.node)); !slices.Equal(p.tags, want) {
				t.Fatalf("part %s: matchTags %v, want %v", p.name, p.tags, want)
			}
			if want := "kubernetes-k8s-e2e-md0-" + p.node; p.name != want || p.deploymentName != want {
				t.Fatalf("part %s: name %q and deployment-name %q, want %q", p.node, p.name, p.deploymentName, want)
			}
			if errs := validation.IsValidLabelValue(p.name); len(errs) > 0 {
				t.Fatalf("part name %q: %v", p.name, errs)
			}
			for what, v := range map[string]int{"min": p.min, "max": p.max} {
				total := int(lo)
				if what == "max" {
					total = int(hi)
				}
				if floor := total / len(nodes); v != floor && v != floor+1 || (total%len(nodes) == 0 && v != floor) {
					t.Fatalf("part %s: %s %d is not %d/%d rounded down or up", p.name, what, v, total, len(nodes))
				}
			}
			if p.min > p.max || p.max < 1 {
				t.Fatalf("part %s: min %d, max %d", p.name, p.min, p.max)
			}
			if diff := cmp.Diff(ps[0].capacity, p.capacity); diff != "" || len(p.capacity) == 0 {
				t.Fatalf("part %s: capacity annotations differ from the first part's (-first +this):\n%s", p.name, diff)
			}
			sumMin, sumMax = sumMin+p.min, sumMax+p.max
			switch {
			case p.replicas != nil:
				sumReplicas += int(*p.replicas)
			case fixed || p.min == p.max:
				t.Fatalf("part %s: min = max = %d but no spec.replicas", p.name, p.min)
			}
		}
		if sumMin != int(lo) || sumMax != int(hi) {
			t.Fatalf("the parts sum to min %d, max %d; the pool's are %d, %d", sumMin, sumMax, lo, hi)
		}
		if fixed && sumReplicas != int(hi) {
			t.Fatalf("the parts' replicas sum to %d, the pool's are %d", sumReplicas, hi)
		}
		shuffled := rapid.Permutation(nodes).Draw(t, "shuffled")
		n.Spec.Proxmox.AllowedNodes = shuffled
		again, err := capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{Capmox: gen})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := capmoxrender.MarshalYAML(objs)
		b, _ := capmoxrender.MarshalYAML(again)
		if diff := cmp.Diff(string(a), string(b)); diff != "" {
			t.Fatalf("the render depends on the order of the nodes (-%v +%v):\n%s", nodes, shuffled, diff)
		}
	})
}

// TestSplitReplicas: the parts sum to n, differ by one at most, and each
// part of a smaller n is at most that part of a larger n.
func TestSplitReplicas(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(1, 64).Draw(t, "k")
		a := rapid.Int32Range(0, 1000).Draw(t, "a")
		b := rapid.Int32Range(a, 1000).Draw(t, "b")
		pa, pb := capmoxrender.SplitReplicas(a, k), capmoxrender.SplitReplicas(b, k)
		var sum int32
		for i := range pa {
			sum += pa[i]
			if pa[i] > pb[i] || pa[0]-pa[i] > 1 || pa[i] < pa[len(pa)-1] {
				t.Fatalf("SplitReplicas(%d, %d) = %v, SplitReplicas(%d, %d) = %v", a, k, pa, b, k, pb)
			}
		}
		if sum != a || len(pa) != k {
			t.Fatalf("SplitReplicas(%d, %d) = %v", a, k, pa)
		}
	})
}
