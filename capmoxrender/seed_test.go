package capmoxrender_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// liveKubernetes is the apps.cozystack.io Kubernetes object a pool's
// version falls back to.
func liveKubernetes(ns, name, version string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(capmoxrender.AppsAPIVersion)
	u.SetKind("Kubernetes")
	u.SetNamespace(ns)
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, version, "spec", "version")
	return u
}

// mdOf returns the MachineDeployment of a rendered pool.
func mdOf(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "MachineDeployment" {
			return o
		}
	}
	t.Fatal("no MachineDeployment rendered")
	return nil
}

// TestPoolFieldsHonouredOrRefused pairs each refusal of a pool field with
// an accepted control, and checks what the accepted ones render.
func TestPoolFieldsHonouredOrRefused(t *testing.T) {
	type mut = func(*capmoxrender.KubernetesNodes, *capmoxrender.Options)
	i32 := func(v int32) *int32 { return &v }
	parent := func(v string) mut {
		return func(n *capmoxrender.KubernetesNodes, o *capmoxrender.Options) {
			n.Spec.Version = ""
			l := &capmoxrender.Objects{}
			l.Add(liveKubernetes(n.Namespace, n.Spec.Cluster, v))
			o.Clusters = l
		}
	}
	cases := map[string]struct {
		reason      string
		mutate      mut
		want        string
		version     string
		minMax      string
		tagsWithout bool
	}{
		"Accepted": {reason: "the control renders", mutate: func(*capmoxrender.KubernetesNodes, *capmoxrender.Options) {}, version: "v1.35.2", minMax: "0/10"},
		"NoPool": {reason: "a worker outside a pool is outside the tenant token's scope", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Proxmox.Pool = "" },
			want: "substrate proxmox requires proxmox.pool: the tenant's Proxmox tokens are granted on /pool/<name>, the one ACL path that follows every VM capmox clones, so a worker outside a pool is outside the tenant's scope; create the pool (pveum pool add <name>) and name it here"},
		"Version130": {reason: "below the supported window", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Version = "v1.30.9" },
			want: `version "v1.30.9" is outside the Kubernetes releases this renderer supports (v1.31 to v1.35); pick a release in that window`},
		"Version131": {reason: "the lowest supported minor renders", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Version = "v1.31.0" }, version: "v1.31.0", minMax: "0/10"},
		"Version136": {reason: "above the supported window", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Version = "v1.36.0" },
			want: `version "v1.36.0" is outside the Kubernetes releases this renderer supports (v1.31 to v1.35); pick a release in that window`},
		"Version2": {reason: "another major", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Version = "v2.33.0" },
			want: `version "v2.33.0" is outside the Kubernetes releases this renderer supports (v1.31 to v1.35); pick a release in that window`},
		"NoVersionDefault": {reason: "no version and no lookup takes the documented default", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Version = "" },
			version: capmoxrender.DefaultKubernetesVersion, minMax: "0/10"},
		"NoVersionParent": {reason: "no version takes the parent cluster's", mutate: parent("v1.33.4"), version: "v1.33.4", minMax: "0/10"},
		"NoVersionParentOutside": {reason: "the parent's version is checked too", mutate: parent("v1.29.1"),
			want: `version (from Kubernetes tenant-e2e/k8s-e2e) "v1.29.1" is outside the Kubernetes releases this renderer supports (v1.31 to v1.35); pick a release in that window`},
		"Replicas": {reason: "replicas fixes the pool size", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Replicas = i32(2) }, version: "v1.35.2", minMax: "2/2"},
		"ReplicasAgreeing": {reason: "min and max equal to replicas", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Replicas, n.Spec.MinReplicas, n.Spec.MaxReplicas = i32(3), i32(3), i32(3)
		}, version: "v1.35.2", minMax: "3/3"},
		"ReplicasAndMin": {reason: "replicas and a different minReplicas", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Replicas, n.Spec.MinReplicas = i32(2), i32(1)
		}, want: "replicas 2 fixes the pool at 2 workers, but minReplicas is 1: set either replicas, or minReplicas and maxReplicas for an autoscaled pool"},
		"ReplicasAndMax": {reason: "replicas and a different maxReplicas", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Replicas, n.Spec.MaxReplicas = i32(2), i32(5)
		}, want: "replicas 2 fixes the pool at 2 workers, but maxReplicas is 5: set either replicas, or minReplicas and maxReplicas for an autoscaled pool"},
		"ReplicasZero": {reason: "a fixed pool of none", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) { n.Spec.Replicas = i32(0) },
			want: "replicas 0: a fixed pool needs at least 1 worker; set minReplicas: 0 and maxReplicas for a pool that may scale to zero"},
		"TalosTagMatches": {reason: "the tag names the installed Talos", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.TemplateTags = []string{"cozystack", "talos", "talos-v1.13.6"}
		}, version: "v1.35.2", minMax: "0/10"},
		"TalosTagDiffers": {reason: "the template boots another Talos than the installer", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.TemplateTags = []string{"cozystack", "talos", "talos-v1.13.7"}
		}, want: `proxmox.templateTags[2] is "talos-v1.13.7", but the workers install Talos v1.13.6 (talos.version): the template the tags select boots another Talos release than the installer writes; tag the template talos-v1.13.6 or set talos.version to match`},
		"TalosTagFollowsVersion": {reason: "talos.version and the tag agree", mutate: func(n *capmoxrender.KubernetesNodes, _ *capmoxrender.Options) {
			n.Spec.Proxmox.TemplateTags = []string{"talos", "talos-v1.13.7"}
			n.Spec.Talos.Version = "v1.13.7"
		}, version: "v1.35.2", minMax: "0/10"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n, o := validNodes(), capmoxrender.Options{}
			tc.mutate(&n, &o)
			objs, err := capmoxrender.RenderNodes(context.Background(), n, o)
			checkRefusal(t, tc.reason, err, tc.want)
			if tc.want != "" {
				return
			}
			md := mdOf(t, objs)
			v, _, _ := unstructured.NestedString(md.Object, "spec", "template", "spec", "version")
			if v != tc.version {
				t.Errorf("%s: version %q, want %q", tc.reason, v, tc.version)
			}
			a := md.GetAnnotations()
			got := a["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"] + "/" + a["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"]
			if got != tc.minMax {
				t.Errorf("%s: autoscaler min/max %s, want %s", tc.reason, got, tc.minMax)
			}
		})
	}
}

// TestPoolUnknownFields: a field KubernetesNodes does not declare is
// refused with its path, next to the same document without it.
func TestPoolUnknownFields(t *testing.T) {
	seed, err := os.ReadFile(filepath.Join("testdata", "scenarios", "nodes-seed", "input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := capmoxrender.ParseKubernetesNodes(seed); err != nil {
		t.Fatalf("the seed pool must parse: %v", err)
	}
	cases := map[string]struct{ from, to, path, hint string }{
		"TopLevel":  {"  replicas: 2\n", "  replicas: 2\n  nodeCount: 2\n", "spec.nodeCount", ""},
		"Proxmox":   {"    pool: tenant-demo\n", "    pool: tenant-demo\n    templateTag: [talos]\n", "spec.proxmox.templateTag", "templateTags"},
		"Network":   {"      vlan: 100\n", "      vlan: 100\n      vlanId: 100\n", "spec.proxmox.network.vlanId", ""},
		"Resources": {"    memory: 8Gi\n", "    memory: 8Gi\n    disk: 20Gi\n", "spec.resources.disk", ""},
		"WrongCase": {"  replicas: 2\n", "  Replicas: 2\n", "spec.Replicas", "replicas"},
		"BothCases": {"  replicas: 2\n", "  replicas: 2\n  Replicas: 3\n", "spec.Replicas", "replicas"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := strings.Replace(string(seed), tc.from, tc.to, 1)
			if in == string(seed) {
				t.Fatalf("the edit %q did not apply", tc.from)
			}
			_, err := capmoxrender.ParseKubernetesNodes([]byte(in))
			want := `cannot read KubernetesNodes "demo-workers": invalid input: unknown field ` + tc.path + ": KubernetesNodes has no such field on the proxmox substrate; remove it or fix its spelling"
			if tc.hint != "" {
				want += ` (did you mean "` + tc.hint + `"?)`
			}
			if !errors.Is(err, capmoxrender.ErrInput) || err.Error() != want {
				t.Errorf("want the input error\n%s\ngot %v", want, err)
			}
		})
	}
}

func TestClusterImageAndVersionRefusals(t *testing.T) {
	img := func(ref string) func(*capmoxrender.Kubernetes, *capmoxrender.Options) {
		return func(_ *capmoxrender.Kubernetes, o *capmoxrender.Options) { o.Images.CCM = ref }
	}
	const repo = "ghcr.io/sergelogvinov/proxmox-cloud-controller-manager"
	cases := map[string]struct {
		reason string
		mutate func(*capmoxrender.Kubernetes, *capmoxrender.Options)
		want   string
	}{
		"Accepted":  {reason: "the default CCM image", mutate: func(*capmoxrender.Kubernetes, *capmoxrender.Options) {}},
		"CCM0161":   {reason: "the release that fixed the version string", mutate: img(repo + ":v0.16.1")},
		"CCMDigest": {reason: "a digest pin is taken as given", mutate: img(repo + "@sha256:" + strings.Repeat("ab", 32))},
		"CCM0150": {reason: "v0.15.0 panics on its own version string", mutate: img(repo + ":v0.15.0"),
			want: `the CCM image "` + repo + `:v0.15.0" is v0.15.0, whose version string lacks the leading v (0.15.0): it panics parsing it at start and crash-loops; use v0.16.1 or later`},
		"CCMTagDigest": {reason: "a release tag next to its digest", mutate: img(repo + ":v0.16.1@sha256:" + strings.Repeat("ab", 32))},
		"CCM0150Digest": {reason: "v0.15.0 is refused next to a digest too", mutate: img(repo + ":v0.15.0@sha256:" + strings.Repeat("ab", 32)),
			want: `the CCM image "` + repo + `:v0.15.0@sha256:` + strings.Repeat("ab", 32) + `" is v0.15.0, whose version string lacks the leading v (0.15.0): it panics parsing it at start and crash-loops; use v0.16.1 or later`},
		"CCMNoVDigest": {reason: "a tag without the leading v, next to a digest", mutate: img(repo + ":0.16.1@sha256:" + strings.Repeat("ab", 32)),
			want: `the CCM image "` + repo + `:0.16.1@sha256:` + strings.Repeat("ab", 32) + `" is tagged "0.16.1", which is not a vMAJOR.MINOR.PATCH release: pin a release such as ` + repo + `:v0.16.1, or a digest`},
		"CCMNoV": {reason: "a tag without the leading v", mutate: img(repo + ":0.16.1"),
			want: `the CCM image "` + repo + `:0.16.1" is tagged "0.16.1", which is not a vMAJOR.MINOR.PATCH release: pin a release such as ` + repo + `:v0.16.1, or a digest`},
		"CCMLatest": {reason: "a moving tag", mutate: img(repo + ":latest"),
			want: `the CCM image "` + repo + `:latest" is tagged "latest", which is not a vMAJOR.MINOR.PATCH release: pin a release such as ` + repo + `:v0.16.1, or a digest`},
		"CCMNoTag": {reason: "no tag at all", mutate: img("localhost:5000/ccm"),
			want: `the CCM image "localhost:5000/ccm" has no tag: pin a release such as ` + repo + `:v0.16.1`},
		"Version136": {reason: "the cluster's version is checked against the window", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) { k.Spec.Version = "v1.36.1" },
			want: `version "v1.36.1" is outside the Kubernetes releases this renderer supports (v1.31 to v1.35); pick a release in that window`},
		"Version131": {reason: "the lowest supported minor", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) { k.Spec.Version = "v1.31.4" }},
		"CapmoxSecret": {reason: "a per-cluster capmox Secret of its own", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.Capmox.CredentialsSecretName = "pve-capmox"
		}},
		"CapmoxSecretIsCCMs": {reason: "the CCM Pod would mount the capmox token", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.Capmox.CredentialsSecretName = "pve"
		}, want: `proxmox.capmox.credentialsSecretName "pve" is also the CCM or CSI credentials Secret: those Pods mount their Secret whole, and the capmox token clones and deletes VMs; give capmox a Secret of its own (keys url, token, secret, insecure, root_ca)`},
		"CapmoxSecretBadName": {reason: "a Secret name", mutate: func(k *capmoxrender.Kubernetes, _ *capmoxrender.Options) {
			k.Spec.Proxmox.Capmox.CredentialsSecretName = "Pve_Capmox"
		}, want: "PREFIX" + `proxmox.capmox.credentialsSecretName "Pve_Capmox" is not a Secret name`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			k, o := validCluster(), capmoxrender.Options{}
			tc.mutate(&k, &o)
			objs, err := capmoxrender.RenderCluster(context.Background(), k, o)
			if prefix, ok := strings.CutPrefix(tc.want, "PREFIX"); ok {
				if err == nil || !strings.HasPrefix(err.Error(), prefix) {
					t.Fatalf("%s: want a refusal starting %q, got %v", tc.reason, prefix, err)
				}
				return
			}
			checkRefusal(t, tc.reason, err, tc.want)
			if err != nil {
				return
			}
			pc := byKind(objs, "ProxmoxCluster")
			ref, found, _ := unstructured.NestedStringMap(pc.Object, "spec", "credentialsRef")
			if name := k.Spec.Proxmox.Capmox.CredentialsSecretName; name != "" {
				if diff := cmp.Diff(map[string]string{"name": name, "namespace": k.Namespace}, ref); diff != "" {
					t.Errorf("%s: credentialsRef (-want +got):\n%s", tc.reason, diff)
				}
			} else if found {
				t.Errorf("%s: without a capmox Secret capmox keeps its controller-wide credentials, got credentialsRef %v", tc.reason, ref)
			}
		})
	}
}

// TestKubernetesMatchesCase: the Kubernetes object's own keys and its
// spec's declared fields match in case. Keys the spec leaves to the chart
// (addons, status, labels) pass, but a declared field in another case,
// alone or beside the right one, is refused by its path: encoding/json
// would take it for the field or drop one of the two. The same object with
// the right keys is admitted.
func TestKubernetesMatchesCase(t *testing.T) {
	seed, err := os.ReadFile(filepath.Join("testdata", "scenarios", "cluster-ipv4", "input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	control := string(seed) + "status:\n  ready: true\n"
	control = strings.Replace(control, "  namespace: tenant-e2eproxmox\n", "  namespace: tenant-e2eproxmox\n  labels: {team: a}\n", 1)
	control = strings.Replace(control, "spec:\n", "spec:\n  addons: {ingress: {enabled: true}}\n", 1)
	k, err := capmoxrender.ParseKubernetes([]byte(control))
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	if k.Name != "k8s-e2e" || k.Spec.Version != "v1.35.2" {
		t.Fatalf("control decoded as %+v", k)
	}
	cases := map[string]struct{ from, to, want string }{
		"MiscasedSpec":      {"spec:\n", "Spec:\n", `unknown field "Spec"; did you mean "spec"?`},
		"BothCasesMetadata": {"  name: k8s-e2e\n", "  name: k8s-e2e\n  Name: other\n", `unknown field "metadata.Name"; did you mean "name"?`},
		"MiscasedVersion":   {"  version: v1.35.2\n", "  Version: v1.35.2\n", `spec: unknown field "Version"; did you mean "version"?`},
		"BothCasesVersion":  {"  version: v1.35.2\n", "  version: v1.35.2\n  VERSION: v1.31.0\n", `spec: unknown field "VERSION"; did you mean "version"?`},
		"Duplicate":         {"  version: v1.35.2\n", "  version: v1.35.2\n  version: v1.31.0\n", `key "version" already set`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := strings.Replace(control, tc.from, tc.to, 1)
			if in == control {
				t.Fatalf("the edit %q did not apply", tc.from)
			}
			_, err := capmoxrender.ParseKubernetes([]byte(in))
			if !errors.Is(err, capmoxrender.ErrInput) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseKubernetes = %v, want ErrInput naming %s", err, tc.want)
			}
		})
	}
}

// TestClusterProxmoxUnknownFields: a field of a Kubernetes object's
// spec.proxmox that the substrate does not declare is refused by its path,
// with the message KubernetesNodes gives; the control, the same document,
// parses, and so does a field outside spec.proxmox (the chart's).
func TestClusterProxmoxUnknownFields(t *testing.T) {
	seed, err := os.ReadFile(filepath.Join("testdata", "scenarios", "cluster-ipv4", "input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := capmoxrender.ParseKubernetes(seed); err != nil {
		t.Fatalf("the seed cluster must parse: %v", err)
	}
	open := strings.Replace(string(seed), "  substrate: proxmox\n", "  substrate: proxmox\n  addons: {certManager: {enabled: true}}\n", 1)
	if _, err := capmoxrender.ParseKubernetes([]byte(open)); err != nil {
		t.Fatalf("a field outside spec.proxmox belongs to the chart: %v", err)
	}
	cases := map[string]struct{ from, to, path, hint string }{
		"CredentialsTypo": {"    ccm:\n      credentialsSecretName: proxmox-credentials\n", "    ccm:\n      credentialsSecretName: proxmox-credentials\n    capmox:\n      credentialsSecretNme: tenant-capmox\n",
			"spec.proxmox.capmox.credentialsSecretNme", "credentialsSecretName"},
		"ReclaimTypo":  {"        reclaimPolicy: Delete\n", "        reclaimPolicie: Retain\n", "spec.proxmox.csi.storageClasses[0].reclaimPolicie", "reclaimPolicy"},
		"AllowedNodes": {"    allowedNodes: []\n", "    allowedNode: [pve1]\n", "spec.proxmox.allowedNode", "allowedNodes"},
		"CSIEnabled":   {"      enabled: true\n", "      enabeld: false\n", "spec.proxmox.csi.enabeld", "enabled"},
		"Unknown":      {"    insecure: false\n", "    insecure: false\n    clusterZone: east\n", "spec.proxmox.clusterZone", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := strings.Replace(string(seed), tc.from, tc.to, 1)
			if in == string(seed) {
				t.Fatalf("the edit %q did not apply", tc.from)
			}
			_, err := capmoxrender.ParseKubernetes([]byte(in))
			want := `cannot read Kubernetes "k8s-e2e": invalid input: unknown field ` + tc.path + ": Kubernetes has no such field on the proxmox substrate; remove it or fix its spelling"
			if tc.hint != "" {
				want += ` (did you mean "` + tc.hint + `"?)`
			}
			if !errors.Is(err, capmoxrender.ErrInput) || err.Error() != want {
				t.Errorf("want the input error\n%s\ngot %v", want, err)
			}
		})
	}
}
