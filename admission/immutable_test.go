package admission

import (
	"errors"
	"testing"

	"pgregory.net/rapid"
)

var (
	gvkKubernetes      = gvk(GroupApps, "v1alpha1", KindKubernetes)
	gvkKubernetesNodes = gvk(GroupApps, "v1alpha1", KindKubernetesNodes)
	gvkHelmRelease     = gvk(GroupHelm, "v2", KindHelmRelease)
)

// application is a Kubernetes or KubernetesNodes application as the
// aggregated API serves it: its spec is the chart's values.
func application(kind string, values m) m {
	return m{"apiVersion": GroupApps + "/v1alpha1", "kind": kind,
		"metadata": m{"name": "c1-md0", "namespace": tenant}, "spec": values}
}

// helmRelease is the HelmRelease the aggregated API stores an application
// of kind as (its labels; "" leaves them out), with values.
func helmRelease(kind string, values m) m {
	meta := m{"name": "kubernetes-nodes-c1-md0", "namespace": tenant}
	if kind != "" {
		meta["labels"] = m{LabelApplicationKind: kind, LabelApplicationGroup: GroupApps, "apps.cozystack.io/application.name": "c1-md0"}
	}
	spec := m{"interval": "5m", "chartRef": m{"kind": "ExternalArtifact", "name": "kubernetes-nodes", "namespace": "cozy-system"}}
	if values != nil {
		spec["values"] = values
	}
	return m{"apiVersion": GroupHelm + "/v2", "kind": KindHelmRelease, "metadata": meta, "spec": spec}
}

// nodePool is the values of a KubernetesNodes pool on Proxmox.
func nodePool(overrides m) m {
	v := m{"cluster": "c1", "substrate": "proxmox", "replicas": 2,
		"resources": m{"cpu": "2", "memory": "4Gi"}, "proxmox": m{"templateTags": l{"talos"}}}
	for k, x := range overrides {
		if x == nil {
			delete(v, k)
			continue
		}
		v[k] = x
	}
	return v
}

func immutableMessage(f int, was, is string) string {
	return immutableFields[f].composed(was, is)
}

const (
	fKubernetesSubstrate = iota
	fNodesSubstrate
	fNodesCluster
	fNodesStorageClass
)

func immutableCases() map[string]pairCase {
	hr := func(kind string, old, cur m) input {
		return input{op: OperationUpdate, kind: gvkHelmRelease, ns: plain(), obj: helmRelease(kind, cur), old: helmRelease(kind, old)}
	}
	app := func(kind string, old, cur m) input {
		g := gvkKubernetesNodes
		if kind == KindKubernetes {
			g = gvkKubernetes
		}
		return input{op: OperationUpdate, kind: g, ns: plain(), obj: application(kind, cur), old: application(kind, old)}
	}
	cluster := func(o m) m {
		v := m{"substrate": "proxmox", "version": "v1.35", "proxmox": m{"allowedNodes": l{"pve1"}}}
		for k, x := range o {
			v[k] = x
		}
		return v
	}
	created := hr(KindKubernetesNodes, nil, nodePool(m{"substrate": "kubevirt"}))
	created.op, created.old = OperationCreate, nil
	return map[string]pairCase{
		"ImmutableClusterSubstrate": {
			reason:   "a cluster's substrate decides its control plane service, CCM and CSI driver",
			refused:  hr(KindKubernetes, cluster(m{"substrate": "kubevirt"}), cluster(nil)),
			admitted: hr(KindKubernetes, cluster(m{"version": "v1.34"}), cluster(nil)),
			policy:   PolicyImmutableFields, message: immutableMessage(fKubernetesSubstrate, "kubevirt", "proxmox"),
		},
		"ImmutableClusterSubstrateDefault": {
			reason:   "an unset substrate is kubevirt: setting proxmox on it is a change, setting kubevirt is not",
			refused:  hr(KindKubernetes, m{"version": "v1.35"}, m{"version": "v1.35", "substrate": "proxmox"}),
			admitted: hr(KindKubernetes, m{"version": "v1.35"}, m{"version": "v1.35", "substrate": "kubevirt"}),
			policy:   PolicyImmutableFields, message: immutableMessage(fKubernetesSubstrate, "kubevirt", "proxmox"),
		},
		"ImmutableClusterSubstrateApplication": {
			reason:   "the application object is judged as its HelmRelease is",
			refused:  app(KindKubernetes, cluster(nil), cluster(m{"substrate": "kubevirt"})),
			admitted: app(KindKubernetes, cluster(nil), cluster(m{"proxmox": m{"allowedNodes": l{"pve1", "pve2"}}})),
			policy:   PolicyImmutableFields, message: immutableMessage(fKubernetesSubstrate, "proxmox", "kubevirt"),
		},
		"ImmutablePoolSubstrate": {
			reason:   "a pool's substrate decides its machine template kind",
			refused:  hr(KindKubernetesNodes, nodePool(m{"substrate": "kubevirt"}), nodePool(nil)),
			admitted: hr(KindKubernetesNodes, nodePool(m{"replicas": 3}), nodePool(nil)),
			policy:   PolicyImmutableFields, message: immutableMessage(fNodesSubstrate, "kubevirt", "proxmox"),
		},
		"ImmutablePoolCluster": {
			reason:   "a pool belongs to the cluster it was created under",
			refused:  hr(KindKubernetesNodes, nodePool(nil), nodePool(m{"cluster": "c2"})),
			admitted: hr(KindKubernetesNodes, nodePool(nil), nodePool(m{"diskSize": "50Gi"})),
			policy:   PolicyImmutableFields, message: immutableMessage(fNodesCluster, "c1", "c2"),
		},
		"ImmutablePoolClusterApplication": {
			reason:   "the KubernetesNodes application is judged as its HelmRelease is",
			refused:  app(KindKubernetesNodes, nodePool(nil), nodePool(m{"cluster": ""})),
			admitted: app(KindKubernetesNodes, nodePool(nil), nodePool(m{"instanceType": "u1.xlarge"})),
			policy:   PolicyImmutableFields, message: immutableMessage(fNodesCluster, "c1", ""),
		},
		"ImmutablePoolStorageClass": {
			reason:   "the workers' disks keep the class they were created with",
			refused:  hr(KindKubernetesNodes, nodePool(m{"substrate": "kubevirt", "storageClass": "replicated"}), nodePool(m{"substrate": "kubevirt", "storageClass": "local"})),
			admitted: hr(KindKubernetesNodes, nodePool(m{"substrate": "kubevirt", "storageClass": "replicated"}), nodePool(m{"substrate": "kubevirt", "storageClass": "replicated", "replicas": 4})),
			policy:   PolicyImmutableFields, message: immutableMessage(fNodesStorageClass, "replicated", "local"),
		},
		"ImmutablePoolStorageClassSet": {
			reason:   "setting a storageClass the pool was created without is a change; an empty one is unset",
			refused:  hr(KindKubernetesNodes, nodePool(nil), nodePool(m{"storageClass": "fast"})),
			admitted: hr(KindKubernetesNodes, nodePool(nil), nodePool(m{"storageClass": ""})),
			policy:   PolicyImmutableFields, message: immutableMessage(fNodesStorageClass, "", "fast"),
		},
		"ImmutableFirstFieldDecides": {
			reason:   "two fields changed: substrate is named first",
			refused:  hr(KindKubernetesNodes, nodePool(nil), nodePool(m{"substrate": "kubevirt", "cluster": "c2"})),
			admitted: hr(KindKubernetesNodes, nodePool(nil), nodePool(m{"substrate": "proxmox", "cluster": "c1"})),
			policy:   PolicyImmutableFields, message: immutableMessage(fNodesSubstrate, "proxmox", "kubevirt"),
		},
		"ImmutableLabelsDropped": {
			reason:   "dropping the application labels in the same update does not lift the rule",
			refused:  input{op: OperationUpdate, kind: gvkHelmRelease, ns: plain(), obj: helmRelease("", nodePool(m{"cluster": "c2"})), old: helmRelease(KindKubernetesNodes, nodePool(nil))},
			admitted: input{op: OperationUpdate, kind: gvkHelmRelease, ns: plain(), obj: helmRelease(KindKubernetesNodes, nodePool(m{"replicas": 5})), old: helmRelease(KindKubernetesNodes, nodePool(nil))},
			policy:   PolicyImmutableFields, message: immutableMessage(fNodesCluster, "c1", "c2"),
		},
		"ImmutableLabelsKept": {
			reason: "a HelmRelease that stores a pool keeps its application labels, or later updates would go unjudged; other labels may change",
			refused: input{op: OperationUpdate, kind: gvkHelmRelease, ns: plain(),
				obj: setPath(helmRelease(KindKubernetesNodes, nodePool(nil)), m{LabelApplicationKind: KindKubernetes, LabelApplicationGroup: GroupApps}, "metadata", "labels"),
				old: helmRelease(KindKubernetesNodes, nodePool(nil))},
			admitted: input{op: OperationUpdate, kind: gvkHelmRelease, ns: plain(),
				obj: setPath(helmRelease(KindKubernetesNodes, nodePool(nil)), m{LabelApplicationKind: KindKubernetesNodes, LabelApplicationGroup: GroupApps, "sharding.fluxcd.io/key": "tenants"}, "metadata", "labels"),
				old: helmRelease(KindKubernetesNodes, nodePool(nil))},
			policy: PolicyImmutableFields, message: labelsRule.composed(KindKubernetesNodes, KindKubernetes),
		},
		"ImmutableLabelsDroppedAlone": {
			reason:   "taking the labels away with the values unchanged is refused too; the label of the application's name is not one of them",
			refused:  input{op: OperationUpdate, kind: gvkHelmRelease, ns: plain(), obj: helmRelease("", nodePool(nil)), old: helmRelease(KindKubernetesNodes, nodePool(nil))},
			admitted: input{op: OperationUpdate, kind: gvkHelmRelease, ns: plain(), obj: setPath(helmRelease(KindKubernetesNodes, nodePool(nil)), m{LabelApplicationKind: KindKubernetesNodes, LabelApplicationGroup: GroupApps}, "metadata", "labels"), old: helmRelease(KindKubernetesNodes, nodePool(nil))},
			policy:   PolicyImmutableFields, message: labelsRule.composed(KindKubernetesNodes, ""),
		},
		"ImmutableNotOurs": {
			reason:   "a HelmRelease the aggregated API did not write is not judged; the same change on a pool is",
			refused:  hr(KindKubernetesNodes, nodePool(nil), nodePool(m{"cluster": "c2"})),
			admitted: hr("", nodePool(nil), nodePool(m{"cluster": "c2"})),
			policy:   PolicyImmutableFields, message: immutableMessage(fNodesCluster, "c1", "c2"),
		},
		"ImmutableCreate": {
			reason:   "CREATE is not judged: a new pool on the other substrate is the way to change it",
			refused:  hr(KindKubernetesNodes, nodePool(nil), nodePool(m{"substrate": "kubevirt"})),
			admitted: created,
			policy:   PolicyImmutableFields, message: immutableMessage(fNodesSubstrate, "proxmox", "kubevirt"),
		},
		"ImmutableClusterKeepsPoolFields": {
			reason:   "a Kubernetes cluster has no pool fields: its storageClass is not held here",
			refused:  hr(KindKubernetesNodes, nodePool(m{"storageClass": "a"}), nodePool(m{"storageClass": "b"})),
			admitted: hr(KindKubernetes, cluster(m{"storageClass": "a"}), cluster(m{"storageClass": "b"})),
			policy:   PolicyImmutableFields, message: immutableMessage(fNodesStorageClass, "a", "b"),
		},
	}
}

func TestImmutableFields(t *testing.T) { runPairs(t, testConfig(), immutableCases()) }

// TestImmutableFieldsOff: with admission.immutableFields false every change
// is admitted and no policy is generated.
func TestImmutableFieldsOff(t *testing.T) {
	cfg := testConfig()
	cfg.ImmutableFields = false
	v := mustValidator(t, cfg)
	for name, tc := range immutableCases() {
		got, err := v.Review(tc.refused.request(t), tc.refused.ns)
		if err != nil || !got.Allowed {
			t.Errorf("%s: want admitted with the policy off, got %+v %v", name, got, err)
		}
	}
	set, err := Policies(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range set.Policies {
		if p.Name == PolicyImmutableFields {
			t.Errorf("%s generated with immutableFields off", p.Name)
		}
	}
}

// TestImmutableFieldsMalformed: a field that is not a string cannot be
// compared and is refused by path, never taken for unset.
func TestImmutableFieldsMalformed(t *testing.T) {
	v := mustValidator(t, testConfig())
	cases := map[string]struct {
		in   input
		want string
	}{
		"number": {
			in: input{op: OperationUpdate, kind: gvkHelmRelease, ns: plain(),
				obj: helmRelease(KindKubernetesNodes, nodePool(m{"cluster": 7})), old: helmRelease(KindKubernetesNodes, nodePool(nil))},
			want: "cannot read HelmRelease: malformed object: spec.values.cluster is json.Number, not a string",
		},
		"values not an object": {
			in: input{op: OperationUpdate, kind: gvkHelmRelease, ns: plain(),
				obj: helmRelease(KindKubernetesNodes, nodePool(nil)), old: setPath(helmRelease(KindKubernetesNodes, nil), l{"x"}, "spec", "values")},
			want: "cannot read the old HelmRelease: malformed object: spec.values is []interface {}, not an object",
		},
	}
	for name, tc := range cases {
		_, err := v.Review(tc.in.request(t), tc.in.ns)
		if !errors.Is(err, ErrMalformedObject) || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %s", name, err, tc.want)
		}
	}
}

func setPath(o m, v any, path ...string) m {
	cur := o
	for _, p := range path[:len(path)-1] {
		cur = cur[p].(m)
	}
	cur[path[len(path)-1]] = v
	return o
}

// Generated requests for the differential test.

var immutableVocab = map[string][]any{
	"substrate":    {absent, nil, "", "kubevirt", "proxmox"},
	"cluster":      {absent, nil, "", "c1", "c2"},
	"storageClass": {absent, nil, "", "replicated", "local"},
}

// absent leaves a field out of the values.
const absent = "\x00absent"

func drawValues(t *rapid.T, label string, keep m) m {
	v := m{"replicas": rapid.IntRange(1, 3).Draw(t, label+"replicas")}
	for _, f := range []string{"substrate", "cluster", "storageClass"} {
		var x any
		if old, ok := keep[f]; ok && rapid.Bool().Draw(t, label+"keep"+f) {
			x = old
		} else if _, kept := keep[f]; !kept && keep != nil && rapid.Bool().Draw(t, label+"keepAbsent"+f) {
			continue
		} else {
			x = rapid.SampledFrom(immutableVocab[f]).Draw(t, label+f)
		}
		if x != absent {
			v[f] = x
		}
	}
	return v
}

func drawImmutable(t *rapid.T) (m, input) {
	old := drawValues(t, "old", nil)
	cur := drawValues(t, "", old)
	create := rapid.IntRange(0, 7).Draw(t, "create") == 0
	var obj, was m
	var kind = gvkHelmRelease
	switch target := rapid.SampledFrom([]string{"hr", "hr", "hr", "app"}).Draw(t, "target"); target {
	case "app":
		app := rapid.SampledFrom([]string{KindKubernetes, KindKubernetesNodes}).Draw(t, "app")
		kind = gvkKubernetes
		if app == KindKubernetesNodes {
			kind = gvkKubernetesNodes
		}
		obj, was = application(app, cur), application(app, old)
	default:
		labels := []string{KindKubernetes, KindKubernetesNodes, KindKubernetesNodes, KindKubernetesNodes, "", "Postgres"}
		oldApp := rapid.SampledFrom(labels).Draw(t, "oldLabels")
		newApp := oldApp
		if rapid.IntRange(0, 4).Draw(t, "relabel") == 0 {
			newApp = rapid.SampledFrom(labels).Draw(t, "newLabels")
		}
		obj, was = helmRelease(newApp, cur), helmRelease(oldApp, old)
		if rapid.IntRange(0, 9).Draw(t, "otherGroup") == 0 {
			obj["metadata"].(m)["labels"] = m{LabelApplicationKind: KindKubernetesNodes, LabelApplicationGroup: "example.com"}
		}
	}
	if create {
		return obj, input{op: OperationCreate, kind: kind}
	}
	return obj, input{op: OperationUpdate, kind: kind, old: was}
}
