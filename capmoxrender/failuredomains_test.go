package capmoxrender_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"pgregory.net/rapid"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/failuredomains"
)

func spreadNodes(replicas int32, domains ...capmoxrender.FailureDomain) capmoxrender.KubernetesNodes {
	n := validNodes()
	n.Spec.Replicas = &replicas
	n.Spec.Proxmox.FailureDomains = domains
	return n
}

func TestFailureDomainsRefusals(t *testing.T) {
	type fd = capmoxrender.FailureDomain
	type mut = func(*capmoxrender.KubernetesNodes, *capmoxrender.Options)
	three := []fd{{Name: "pve1"}, {Name: "pve2"}, {Name: "rack-b", Nodes: []string{"pve3", "pve4"}}}
	cases := map[string]struct {
		reason string
		mutate mut
		field  string
		want   string
	}{
		"Accepted": {reason: "per-node and multi-node domains render", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			o.Clusters = clusterWithNodes("tenant-e2e", "k8s-e2e", "pve1", "pve2", "pve3", "pve4")
		}},
		"One": {reason: "one domain spreads nothing", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.FailureDomains = three[:1]
		}, field: "proxmox.failureDomains", want: "proxmox.failureDomains lists 1 domain(s): a pool spreads over two or more"},
		"EmptyNodes": {reason: "an explicit empty node list is a mistake, not the shorthand", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.FailureDomains = []fd{{Name: "pve1"}, {Name: "rack-b", Nodes: []string{}}}
		}, field: "proxmox.failureDomains[1].nodes", want: `proxmox.failureDomains[1].nodes is empty: list the domain's Proxmox nodes, or leave nodes out for the one node named "rack-b"`},
		"NodeTwice": {reason: "a node fails with one domain", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.FailureDomains = []fd{{Name: "pve1"}, {Name: "rack-b", Nodes: []string{"pve2", "pve1"}}}
		}, field: "proxmox.failureDomains[1].nodes[1]", want: `proxmox.failureDomains[1].nodes[1] is node "pve1", which failure domain "pve1" holds too`},
		"BadName": {reason: "the name is a label value and part of object names", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.FailureDomains = []fd{{Name: "pve1"}, {Name: "Rack_B", Nodes: []string{"pve3"}}}
		}, field: "proxmox.failureDomains[1].name", want: `proxmox.failureDomains[1].name is "Rack_B", which is not a lowercase DNS label`},
		"SameName": {reason: "two domains of one name would render one MachineDeployment", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.FailureDomains = []fd{{Name: "a", Nodes: []string{"pve1"}}, {Name: "a", Nodes: []string{"pve2"}}}
		}, field: "proxmox.failureDomains[1].name", want: `proxmox.failureDomains[1].name is "a", which names another domain too`},
		"BadNode": {reason: "nodes are Proxmox node names", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.FailureDomains = []fd{{Name: "pve1"}, {Name: "b", Nodes: []string{"pve_2"}}}
		}, field: "proxmox.failureDomains[1].nodes[0]", want: `proxmox.failureDomains[1].nodes[0] is "pve_2", which is not a Proxmox node name`},
		"UnknownNode": {reason: "the cluster's allowedNodes bound the domains when known", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			o.Clusters = clusterWithNodes("tenant-e2e", "k8s-e2e", "pve1", "pve2", "pve3")
		}, field: "proxmox.failureDomains[2]", want: `proxmox.failureDomains[2] ("rack-b") holds node "pve4", which is not in the cluster's proxmox.allowedNodes [pve1 pve2 pve3]`},
		"TooFewReplicas": {reason: "every domain needs a worker", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Replicas = i32p(2)
		}, field: "replicas", want: "replicas 2 is fewer than the 3 failure domains of proxmox.failureDomains"},
		"TooFewMax": {reason: "an autoscaled pool needs a worker per domain at its maximum", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Replicas, n.Spec.MinReplicas, n.Spec.MaxReplicas = nil, i32p(0), i32p(2)
		}, field: "maxReplicas", want: "maxReplicas 2 is fewer than the 3 failure domains"},
		"AllowedNodes": {reason: "the domains' nodes are the pool's nodes", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.AllowedNodes = []string{"pve1"}
		}, field: "proxmox.allowedNodes", want: "proxmox.allowedNodes and proxmox.failureDomains both place the workers"},
		"HA": {reason: "pool HA moves workers out of their domain", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.HA = true
		}, field: "proxmox.ha", want: "proxmox.ha restarts a lost node's workers on any other node"},
		"RunningPool": {reason: "a pool that runs as one MachineDeployment is not split in place", mutate: func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			l := &capmoxrender.Objects{}
			l.Add(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
				"metadata": map[string]any{"name": "kubernetes-k8s-e2e-md0", "namespace": "tenant-e2e"},
				"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"infrastructureRef": map[string]any{"kind": "ProxmoxMachineTemplate"}}}}}})
			o.Guards = l
		}, field: "proxmox.failureDomains", want: `pool "md0" runs as the one MachineDeployment kubernetes-k8s-e2e-md0`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := spreadNodes(6, three...)
			o := capmoxrender.Options{}
			tc.mutate(&n, &o)
			_, err := capmoxrender.RenderNodes(context.Background(), n, o)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("%s: %v", tc.reason, err)
				}
				return
			}
			var re *capmoxrender.RefusalError
			if !errors.As(err, &re) || re.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s: got %v (field %q), want field %q and %q", tc.reason, err, fieldOf(re), tc.field, tc.want)
			}
		})
	}
}

// TestFailureDomainsGPUs: gpus and failure domains both place workers.
func TestFailureDomainsGPUs(t *testing.T) {
	n := spreadNodes(4, capmoxrender.FailureDomain{Name: "pve1"}, capmoxrender.FailureDomain{Name: "pve2"})
	n.Spec.GPUs = []capmoxrender.GPU{{Name: "a100"}}
	n.Spec.Proxmox.TemplateTags = []string{"cozystack", "talos", "gpu-1x-a100"}
	o := capmoxrender.Options{PCIMappings: []capmoxrender.PCIMapping{{ID: "a100"}}}
	_, err := capmoxrender.RenderNodes(context.Background(), n, o)
	var re *capmoxrender.RefusalError
	if !errors.As(err, &re) || re.Field != "gpus" || !strings.Contains(err.Error(), "gpus places the workers on the nodes of its PCI mapping, which proxmox.failureDomains cannot spread over") {
		t.Fatalf("RenderNodes with gpus and failureDomains: %v, want the refusal of gpus beside proxmox.failureDomains", err)
	}
}

// TestFailureDomainsParse: the strict reader takes failureDomains, keeps
// an explicit empty node list apart from none, and refuses an unknown
// field of a domain by its path.
func TestFailureDomainsParse(t *testing.T) {
	doc := func(domains string) []byte {
		return []byte("apiVersion: apps.cozystack.io/v1alpha1\nkind: KubernetesNodes\nmetadata: {name: k8s-e2e-md0, namespace: tenant-e2e}\n" +
			"spec: {cluster: k8s-e2e, proxmox: {failureDomains: " + domains + "}}\n")
	}
	n, err := capmoxrender.ParseKubernetesNodes(doc("[{name: pve1}, {name: b, nodes: []}]"))
	if err != nil {
		t.Fatal(err)
	}
	fd := n.Spec.Proxmox.FailureDomains
	if len(fd) != 2 || fd[0].Nodes != nil || fd[1].Nodes == nil || len(fd[1].Nodes) != 0 {
		t.Fatalf("failureDomains read as %#v", fd)
	}
	_, err = capmoxrender.ParseKubernetesNodes(doc("[{name: pve1, node: [pve1]}]"))
	if err == nil || !strings.Contains(err.Error(), "unknown field spec.proxmox.failureDomains[0].node") {
		t.Fatalf("unknown field of a domain: %v", err)
	}
}

// renderedDomains are the MachineDeployments of a rendered spread pool.
func renderedDomains(t *rapid.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var mds []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "MachineDeployment" {
			mds = append(mds, u)
		}
	}
	return mds
}

func annotationInt(t *rapid.T, u *unstructured.Unstructured, key string) int32 {
	v, err := strconv.Atoi(u.GetAnnotations()[key])
	if err != nil {
		t.Fatalf("%s: annotation %s: %v", u.GetName(), key, err)
	}
	return int32(v)
}

// TestFailureDomainsSplitProperty: a spread pool renders one
// MachineDeployment per domain whose replicas and autoscaler bounds sum to
// the pool's, each within floor/ceil of an even share, each narrowed to its
// domain's nodes and labelled with its pool and domain, deterministically.
func TestFailureDomainsSplitProperty(t *testing.T) {
	min, max := "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size", "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(2, 6).Draw(t, "domains")
		var domains []capmoxrender.FailureDomain
		for i := range k {
			domains = append(domains, capmoxrender.FailureDomain{Name: fmt.Sprintf("pve%d", i+1)})
		}
		n := spreadNodes(0, domains...)
		n.Spec.Replicas = nil
		hi := rapid.Int32Range(int32(k), 40).Draw(t, "max")
		lo := rapid.Int32Range(0, hi).Draw(t, "min")
		if rapid.Bool().Draw(t, "fixed") {
			n.Spec.Replicas, lo = &hi, hi
		} else {
			n.Spec.MinReplicas, n.Spec.MaxReplicas = &lo, &hi
		}
		gen := rapid.SampledFrom([]capmoxrender.Capmox{capmoxrender.CapmoxV07, capmoxrender.CapmoxV08}).Draw(t, "capmox")
		objs, err := capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{Capmox: gen})
		if err != nil {
			t.Fatal(err)
		}
		mds := renderedDomains(t, objs)
		if len(mds) != k {
			t.Fatalf("%d MachineDeployments for %d domains", len(mds), k)
		}
		var sumMin, sumMax int32
		for i, md := range mds {
			a, b := annotationInt(t, md, min), annotationInt(t, md, max)
			for _, c := range []struct{ got, total int32 }{{a, lo}, {b, hi}} {
				if c.got < c.total/int32(k) || c.got > (c.total+int32(k)-1)/int32(k) {
					t.Fatalf("%s: %d is not within floor/ceil of %d over %d", md.GetName(), c.got, c.total, k)
				}
			}
			sumMin, sumMax = sumMin+a, sumMax+b
			d := domains[i].Name
			if md.GetName() != "kubernetes-k8s-e2e-md0-"+d || md.GetLabels()[failuredomains.LabelDomain] != d || md.GetLabels()[failuredomains.LabelPool] != "kubernetes-k8s-e2e-md0" {
				t.Fatalf("MachineDeployment %s labelled %v for domain %s", md.GetName(), md.GetLabels(), d)
			}
			if md.GetAnnotations()[failuredomains.AnnotationNodes] != d {
				t.Fatalf("%s: nodes annotation %q", md.GetName(), md.GetAnnotations()[failuredomains.AnnotationNodes])
			}
			replicas, found, _ := unstructured.NestedInt64(md.Object, "spec", "replicas")
			if lo == hi && (!found || int32(replicas) != a || annotationInt(t, md, failuredomains.AnnotationShare) != a || annotationInt(t, md, failuredomains.AnnotationSize) != hi) {
				t.Fatalf("fixed pool: %s has replicas %d (%v), share %q, size %q; want %d of %d", md.GetName(), replicas, found,
					md.GetAnnotations()[failuredomains.AnnotationShare], md.GetAnnotations()[failuredomains.AnnotationSize], a, hi)
			}
		}
		if sumMin != lo || sumMax != hi {
			t.Fatalf("domains sum to min %d max %d, pool has %d..%d", sumMin, sumMax, lo, hi)
		}
		checkDomainTemplates(t, objs, domains)
		again, err := capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{Capmox: gen})
		if err != nil || !slices.EqualFunc(objs, again, func(a, b *unstructured.Unstructured) bool { return fmt.Sprint(a.Object) == fmt.Sprint(b.Object) }) {
			t.Fatalf("a second render differs (%v)", err)
		}
	})
}

// checkDomainTemplates: every domain's ProxmoxMachineTemplate allows its
// domain's nodes only, and one MachineHealthCheck selects the pool.
func checkDomainTemplates(t *rapid.T, objs []*unstructured.Unstructured, domains []capmoxrender.FailureDomain) {
	var pmts, mhcs int
	for _, u := range objs {
		switch u.GetKind() {
		case "ProxmoxMachineTemplate":
			nodes, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "template", "spec", "allowedNodes")
			d := domains[pmts].Name
			if !strings.HasPrefix(u.GetName(), "kubernetes-k8s-e2e-md0-"+d+"-") || !slices.Equal(nodes, []string{d}) {
				t.Fatalf("template %s allows %v, want domain %s", u.GetName(), nodes, d)
			}
			pmts++
		case "MachineHealthCheck":
			sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
			if sel[failuredomains.LabelPool] != "kubernetes-k8s-e2e-md0" {
				t.Fatalf("MachineHealthCheck selects %v", sel)
			}
			mhcs++
		}
	}
	if pmts != len(domains) || mhcs != 1 {
		t.Fatalf("%d templates and %d health checks for %d domains", pmts, mhcs, len(domains))
	}
}

func i32p(v int32) *int32 { return &v }
