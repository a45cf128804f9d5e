package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
)

// admissionRun runs the CLI in-process and returns stdout, stderr and the
// exit code.
func admissionRun(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return run(t, args...)
}

// admissionFiles writes name→content into a fresh directory.
func admissionFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const podReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
  "uid":"705ab4f5-6393-11e8-b7cc-42010a800002",
  "kind":{"group":"","version":"v1","kind":"Pod"},
  "resource":{"group":"","version":"v1","resource":"pods"},
  "namespace":"tenant-a","operation":"CREATE",
  "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"tenant-a",
    "annotations":{"k8s.v1.cni.cncf.io/networks":"NETWORKS"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`

const machineReview = `apiVersion: admission.k8s.io/v1
kind: AdmissionReview
request:
  uid: m-1
  kind: {group: infrastructure.cluster.x-k8s.io, version: v1alpha2, kind: ProxmoxMachine}
  resource: {group: infrastructure.cluster.x-k8s.io, version: v1alpha2, resource: proxmoxmachines}
  namespace: tenant-a
  operation: CREATE
  object:
    apiVersion: infrastructure.cluster.x-k8s.io/v1alpha2
    kind: ProxmoxMachine
    metadata: {name: m, namespace: tenant-a}
    spec:
      network:
        networkDevices:
          - {name: net0, bridge: vmbr0, vlan: 12}
`

// vnetReview is the review of docs/admission.md: a v1alpha2 machine with
// one NIC on bridge, with extra fields, and pool.
func vnetReview(bridge, extra, pool string) string {
	return `apiVersion: admission.k8s.io/v1
kind: AdmissionReview
request:
  uid: vnet-1
  kind: {group: infrastructure.cluster.x-k8s.io, version: v1alpha2, kind: ProxmoxMachine}
  resource: {group: infrastructure.cluster.x-k8s.io, version: v1alpha2, resource: proxmoxmachines}
  namespace: tenant-a
  operation: CREATE
  object:
    apiVersion: infrastructure.cluster.x-k8s.io/v1alpha2
    kind: ProxmoxMachine
    metadata: {name: worker-0, namespace: tenant-a}
    spec:
      network:
        networkDevices:
          - {name: net0, bridge: ` + bridge + `, ` + extra + `ipPoolRef: [{apiGroup: ipam.cluster.x-k8s.io, kind: InClusterIPPool, name: ` + pool + `}]}
`
}

func TestAdmissionReview(t *testing.T) {
	dir := admissionFiles(t, map[string]string{
		"foreign.json":     strings.Replace(podReview, "NETWORKS", "tenant-b/subnet-b", 1),
		"own.json":         strings.Replace(podReview, "NETWORKS", "subnet-a", 1),
		"machine.yaml":     machineReview,
		"ns.yaml":          "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tenant-a\n  annotations:\n    proxmox.cozystack.io/networks: vmbr70/101/subnet-a\n",
		"other-ns.yaml":    "apiVersion: v1\nkind: Namespace\nmetadata: {name: tenant-b}\n",
		"miscased-ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tenant-a\n  annotations: {}\n  Annotations:\n    proxmox.cozystack.io/networks: vmbr70/101/subnet-a\n",
		"miscased.json":    strings.Replace(strings.Replace(podReview, "NETWORKS", "subnet-a", 1), `"request"`, `"Request"`, 1),
		"values.yaml":      "zones: [{name: default, bridge: vmbr70, uplinkVLAN: 70, uplinkBridges: [vmbr0]}]\n",
		"vnet-values.yaml": "zones: [{name: default, bridge: vmbr70, sdn: {mode: VNets, zone: pxtenant, vnetPrefix: pxa}}]\n",
		"vnet-ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tenant-a\n  annotations:\n    proxmox.cozystack.io/networks: pxa0101/subnet-a,vmbr70/101/subnet-a\n",
		"vnet-own.yaml":    vnetReview("pxa0101", "", "subnet-a"),
		"vnet-tagged.yaml": vnetReview("pxa0101", "vlan: 101, ", "subnet-a"),
		"vnet-other.yaml":  vnetReview("pxa0102", "", "subnet-b"),
		"bad-values.yaml":  "zones: [{name: default, bridge: vmbr70, uplinkBridges: vmbr0}]\n",
		"bridge-tag.yaml":  strings.Replace(machineReview, "{name: net0, bridge: vmbr0, vlan: 12}", "{name: net0, bridge: 'vmbr70,tag=102'}", 1),
		"bridge-vlan.yaml": strings.Replace(machineReview, "{name: net0, bridge: vmbr0, vlan: 12}", "{name: net0, bridge: vmbr70, vlan: 102}", 1),
		"vnet-comma.yaml":  vnetReview("'pxa0102,'", "", "subnet-b"),
	})
	p := func(name string) string { return filepath.Join(dir, name) }
	podMsg := "a pod may attach only network attachment definitions and Kube-OVN subnets of its own namespace (tenant-a; a multus default network as tenant-a/<name>); refused: k8s.v1.cni.cncf.io/networks=tenant-b/subnet-b"
	cases := map[string]struct {
		reason string
		args   []string
		code   int
		out    []string
		errOut string
	}{
		"Refused": {
			reason: "a foreign network is refused, exit 1, the message in the table",
			args:   []string{"admission", "review", "-f", p("foreign.json")},
			code:   1, out: []string{"proxmox-network-pod-attachments", "422", podMsg},
		},
		"Admitted": {
			reason: "the control with the own network is admitted, exit 0",
			args:   []string{"admission", "review", "-f", p("own.json")},
			out:    []string{"705ab4f5-6393-11e8-b7cc-42010a800002", "true"},
		},
		"MachineWithValues": {
			reason: "uplink bridges come from the package values",
			args:   []string{"admission", "review", "-f", p("machine.yaml"), "--config", p("values.yaml"), "--namespace-file", p("ns.yaml")},
			code:   1, out: []string{"a NIC may not use vmbr0: these bridges enslave the parent device of a Proxmox network zone uplink, so a machine on them reaches the zone trunk; got vmbr0/12"},
		},
		"OwnVNet": {
			reason: "docs/admission.md: the namespace's own VNet, untagged, is admitted",
			args:   []string{"admission", "review", "-f", p("vnet-own.yaml"), "--config", p("vnet-values.yaml"), "--namespace-file", p("vnet-ns.yaml")},
			out:    []string{"vnet-1", "true"},
		},
		"VNetTagged": {
			reason: "docs/admission.md: the same NIC with a tag is refused (OwnVNet is the control)",
			args:   []string{"admission", "review", "-f", p("vnet-tagged.yaml"), "--config", p("vnet-values.yaml"), "--namespace-file", p("vnet-ns.yaml")},
			code:   1, out: []string{"a NIC on a Proxmox network zone VNet may not carry a VLAN tag"},
		},
		"OtherVNet": {
			reason: "docs/admission.md: another tenant's VNet is refused (OwnVNet is the control)",
			args:   []string{"admission", "review", "-f", p("vnet-other.yaml"), "--config", p("vnet-values.yaml"), "--namespace-file", p("vnet-ns.yaml")},
			code:   1, out: []string{"a NIC on a Proxmox network zone VNet must use a Proxmox network of this namespace"},
		},
		"BridgeCarriesTag": {
			reason: "net0 would read tag=102 from the bridge, so it is refused in a namespace without networks, exit 1, naming the field (BridgeVLAN is the control)",
			args:   []string{"admission", "review", "-f", p("bridge-tag.yaml")},
			code:   1, out: []string{"proxmox-network-machine-binding", "422", `spec.network.networkDevices[0].bridge is "vmbr70,tag=102", which is not a Linux bridge name such as vmbr0`, "put the VLAN in vlan"},
		},
		"BridgeVLAN": {
			reason: "the same VLAN in vlan, on a bridge of no zone, is admitted",
			args:   []string{"admission", "review", "-f", p("bridge-vlan.yaml")},
			out:    []string{"m-1", "true"},
		},
		"VNetTrailingComma": {
			reason: "pxa0102, with the zone values, in a namespace without networks, where the VNet rule would refuse pxa0102 itself",
			args:   []string{"admission", "review", "-f", p("vnet-comma.yaml"), "--config", p("vnet-values.yaml")},
			code:   1, out: []string{`spec.network.networkDevices[0].bridge is "pxa0102,", which is not a Linux bridge name such as vmbr0`},
		},
		"MachineWithoutValues": {
			reason: "without zones the same NIC is refused only because the namespace owns networks",
			args:   []string{"admission", "review", "-f", p("machine.yaml"), "--namespace-file", p("ns.yaml")},
			code:   1, out: []string{"every NIC must use a Proxmox network of this namespace (bridge/vlan/pool one of vmbr70/101/subnet-a)"},
		},
		"MachinePlainNamespace": {
			reason: "without zones or networks there is nothing to refuse, and stderr says what was assumed",
			args:   []string{"admission", "review", "-f", p("machine.yaml")},
			out:    []string{"m-1", "true"},
			errOut: `Note: no --namespace-file: namespace "tenant-a" is taken to have no labels or annotations, so it holds no Proxmox network`,
		},
		"MiscasedNamespaceKey": {
			reason: "metadata.Annotations beside metadata.annotations is refused by its path, not one of them dropped (ns.yaml is the control)",
			args:   []string{"admission", "review", "-f", p("machine.yaml"), "--namespace-file", p("miscased-ns.yaml")},
			code:   1, errOut: `unknown field "metadata.Annotations"; did you mean "annotations"?`,
		},
		"MiscasedReviewKey": {
			reason: "a review's Request is not taken for request (own.json is the control)",
			args:   []string{"admission", "review", "-f", p("miscased.json")},
			code:   1, errOut: `unknown field "Request"; did you mean "request"?`,
		},
		"NamespaceMismatch": {
			reason: "a namespace file for another namespace is an error",
			args:   []string{"admission", "review", "-f", p("foreign.json"), "--namespace-file", p("other-ns.yaml")},
			code:   1, errOut: `describes namespace "tenant-b", but the request is in "tenant-a"`,
		},
		"BadValues": {
			reason: "the package's render failure, verbatim",
			args:   []string{"admission", "review", "-f", p("own.json"), "--config", p("bad-values.yaml")},
			code:   1, errOut: "zones[default].uplinkBridges must be a list of bridge names",
		},
		"NoFile": {
			reason: "-f is required",
			args:   []string{"admission", "review"},
			code:   2, errOut: `required flag(s) "file" not set`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := admissionRun(t, tc.args...)
			if code != tc.code {
				t.Fatalf("%s: exit %d, want %d (stderr %q)", tc.reason, code, tc.code, errOut)
			}
			// Messages wrap under their row; compare with runs of spaces collapsed.
			flat := strings.Join(strings.Fields(out), " ")
			for _, want := range tc.out {
				if !strings.Contains(flat, want) {
					t.Errorf("%s: stdout lacks %q:\n%s", tc.reason, want, out)
				}
			}
			if !strings.Contains(errOut, tc.errOut) {
				t.Errorf("%s: stderr %q lacks %q", tc.reason, errOut, tc.errOut)
			}
		})
	}
}

func TestAdmissionReviewJSON(t *testing.T) {
	dir := admissionFiles(t, map[string]string{"r.json": strings.Replace(podReview, "NETWORKS", `[{\"name\":\"x\",\"namespace\":\"tenant-b\"}]`, 1)})
	out, _, code := admissionRun(t, "-o", "json", "admission", "review", "-f", filepath.Join(dir, "r.json"))
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal([]byte(out), &review); err != nil {
		t.Fatalf("-o json prints the AdmissionReview: %v\n%s", err, out)
	}
	if review.Kind != "AdmissionReview" || review.Response == nil || review.Response.UID != "705ab4f5-6393-11e8-b7cc-42010a800002" ||
		review.Response.Allowed || review.Response.Result.Code != 422 {
		t.Errorf("unexpected review: %+v", review)
	}
}

func TestAdmissionPolicies(t *testing.T) {
	dir := admissionFiles(t, map[string]string{
		"values.yaml": "zones: [{name: default, bridge: vmbr70, uplinkVLAN: 70}]\nadmission: {vmNetworkNamespace: false, immutableFields: false, validationActions: [Warn]}\n",
		"bad.yaml":    "zones: [{name: a, bridge: vmbr70}, {name: b, bridge: vmbr71, uplinkBridges: [vmbr70]}]\n",
	})
	out, errOut, code := admissionRun(t, "admission", "policies", "--config", filepath.Join(dir, "values.yaml"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := strings.Count(out, "\n---\n"); got != 3 {
		t.Errorf("a stream of two policies and two bindings has 3 separators, got %d:\n%s", got, out)
	}
	for _, want := range []string{"name: proxmox-network-machine-binding", "name: proxmox-network-pod-attachments", "failurePolicy: Fail", "- Warn", `'[70]'`} {
		if !strings.Contains(out, want) {
			t.Errorf("policies lack %q", want)
		}
	}
	if strings.Contains(out, "proxmox-network-vm-attachments") {
		t.Errorf("vmNetworkNamespace: false drops the VM policy")
	}
	out, _, code = admissionRun(t, "-o", "json", "admission", "policies")
	var list struct {
		Kind  string
		Items []struct {
			Kind     string
			Metadata struct{ Name string }
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || code != 0 {
		t.Fatalf("-o json prints a List: %v", err)
	}
	var got []string
	for _, it := range list.Items {
		got = append(got, it.Kind+"/"+it.Metadata.Name)
	}
	want := []string{
		"ValidatingAdmissionPolicy/proxmox-network-machine-binding", "ValidatingAdmissionPolicyBinding/proxmox-network-machine-binding",
		"ValidatingAdmissionPolicy/proxmox-network-vm-attachments", "ValidatingAdmissionPolicyBinding/proxmox-network-vm-attachments",
		"ValidatingAdmissionPolicy/proxmox-network-pod-attachments", "ValidatingAdmissionPolicyBinding/proxmox-network-pod-attachments",
		"ValidatingAdmissionPolicy/proxmox-kubernetes-immutable-fields", "ValidatingAdmissionPolicyBinding/proxmox-kubernetes-immutable-fields",
	}
	if diff := cmp.Diff(want, got); diff != "" || list.Kind != "List" {
		t.Errorf("List %s (-want +got):\n%s", list.Kind, diff)
	}
	_, errOut, code = admissionRun(t, "admission", "policies", "--config", filepath.Join(dir, "bad.yaml"))
	if code != 1 || !strings.Contains(errOut, "uplinkBridges lists vmbr70, which is a zone bridge") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// poolReview is the docs' HelmRelease update of the pool alpha-md0, with the
// new object's values.
func poolReview(values string) string {
	obj := func(v string) string {
		return `
    apiVersion: helm.toolkit.fluxcd.io/v2
    kind: HelmRelease
    metadata:
      name: kubernetes-nodes-alpha-md0
      namespace: tenant-alpha
      labels:
        apps.cozystack.io/application.group: apps.cozystack.io
        apps.cozystack.io/application.kind: KubernetesNodes
        apps.cozystack.io/application.name: alpha-md0
    spec:
      values: ` + v + "\n"
	}
	return `apiVersion: admission.k8s.io/v1
kind: AdmissionReview
request:
  uid: 7f0c0a4e-1
  operation: UPDATE
  kind: {group: helm.toolkit.fluxcd.io, version: v2, kind: HelmRelease}
  resource: {group: helm.toolkit.fluxcd.io, version: v2, resource: helmreleases}
  namespace: tenant-alpha
  name: kubernetes-nodes-alpha-md0
  oldObject:` + obj("{cluster: alpha, substrate: proxmox, replicas: 3}") + `  object:` + obj(values)
}

// TestAdmissionReviewPool: docs/admission.md's pool update; the substrate
// change it mentions is refused, exit 1, and neither prints the note about
// a namespace the immutable-fields policy never reads.
func TestAdmissionReviewPool(t *testing.T) {
	dir := admissionFiles(t, map[string]string{
		"replicas.yaml":  poolReview("{cluster: alpha, substrate: proxmox, replicas: 4}"),
		"substrate.yaml": poolReview("{cluster: alpha, substrate: kubevirt, replicas: 3}"),
	})
	for name, want := range map[string]struct {
		code int
		out  string
	}{
		"replicas.yaml":  {0, "7f0c0a4e-1 true - 200"},
		"substrate.yaml": {1, `proxmox-kubernetes-immutable-fields 422 message: substrate of a KubernetesNodes pool cannot change ("proxmox" to "kubevirt"): create a new KubernetesNodes pool on the other substrate and scale this one down`},
	} {
		out, errOut, code := admissionRun(t, "admission", "review", "-f", filepath.Join(dir, name))
		if code != want.code || !strings.Contains(strings.Join(strings.Fields(out), " "), want.out) {
			t.Errorf("%s: exit %d, want %d; stdout lacks %q:\n%s", name, code, want.code, want.out, out)
		}
		if strings.Contains(errOut, "namespace-file") {
			t.Errorf("%s: the note about the namespace for a policy that reads none: %s", name, errOut)
		}
	}
}
