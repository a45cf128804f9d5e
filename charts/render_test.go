package charts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/admission"
	"github.com/pxsubstrate/pxsubstrate/internal/controller"
)

// base are the objects every render of proxmox-network holds.
var base = []string{
	"ClusterRole /cozy:proxmox-network:view",
	"ClusterRole /proxmox-network-controller",
	"ClusterRole /proxmox-network-controller-metrics-reader",
	"ClusterRoleBinding /proxmox-network-controller",
	"Deployment " + namespace + "/proxmox-network-controller",
	"Role " + namespace + "/proxmox-network-controller-leader-election",
	"RoleBinding " + namespace + "/proxmox-network-controller-leader-election",
	"Service " + namespace + "/proxmox-network-controller-metrics",
	"ServiceAccount " + namespace + "/proxmox-network-controller",
}

var (
	tlsRole  = []string{"Role cozy-kubeovn/proxmox-network-controller-ovn-tls", "RoleBinding cozy-kubeovn/proxmox-network-controller-ovn-tls"}
	policies = []string{
		"ValidatingAdmissionPolicy /proxmox-network-machine-binding", "ValidatingAdmissionPolicyBinding /proxmox-network-machine-binding",
		"ValidatingAdmissionPolicy /proxmox-network-pod-attachments", "ValidatingAdmissionPolicyBinding /proxmox-network-pod-attachments",
		"ValidatingAdmissionPolicy /proxmox-network-vm-attachments", "ValidatingAdmissionPolicyBinding /proxmox-network-vm-attachments",
		"ValidatingAdmissionPolicy /proxmox-kubernetes-immutable-fields", "ValidatingAdmissionPolicyBinding /proxmox-kubernetes-immutable-fields",
	}
	alertRule = []string{"PrometheusRule " + namespace + "/proxmox-network-controller"}
)

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return out
}

// TestRenderBranches renders proxmox-network with each values branch and
// checks which objects come out and what the branch changes in them.
func TestRenderBranches(t *testing.T) {
	cases := map[string]struct {
		reason  string
		values  string
		objects []string
		check   func(t *testing.T, objs []*unstructured.Unstructured)
	}{
		"Defaults": {
			reason:  "the package defaults: policies, the TLS Secret role, alerts, no zones, no trunk, no transit",
			objects: join(base, tlsRole, policies, alertRule),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				want := []string{"--leader-elect=true", "--manage-gateway-chassis=true", "--ovn-nb-address=ssl:ovn-nb.cozy-kubeovn.svc:6641",
					"--ovn-tls-secret=cozy-kubeovn/kube-ovn-tls", "--subnet-prune-timeout=10m", "--metrics-bind-address=:8080", "--metrics-secure=true",
					"--health-probe-bind-address=:8081", "--webhook-port=0", "--graceful-shutdown-timeout=30s"}
				if diff := cmp.Diff(want, args(t, objs)); diff != "" {
					t.Errorf("args: -want +got:\n%s", diff)
				}
				checkRules(t, objs, "ClusterRole /proxmox-network-controller", "authentication.k8s.io/tokenreviews", true)
			},
		},
		"NoGatewayManagement": {
			reason:  "without gateway management no TLS Secret is read, so no Role grants it",
			values:  "ovn: {manageGatewayChassis: false, nbAddress: tcp:127.0.0.1:6641, tlsSecret: ''}",
			objects: join(base, policies, alertRule),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				checkArgs(t, objs, "--manage-gateway-chassis=false", "--ovn-nb-address=tcp:127.0.0.1:6641", "--ovn-tls-secret=")
			},
		},
		"OtherTLSSecret": {
			reason:  "the TLS Role follows ovn.tlsSecret's namespace and name",
			values:  "ovn: {tlsSecret: kube-system/ovn-tls}",
			objects: join(base, policies, alertRule, []string{"Role kube-system/proxmox-network-controller-ovn-tls", "RoleBinding kube-system/proxmox-network-controller-ovn-tls"}),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				r := mustFind(t, objs, "Role kube-system/proxmox-network-controller-ovn-tls")
				rules, _, _ := unstructured.NestedSlice(r.Object, "rules")
				if got := rules[0].(map[string]any)["resourceNames"]; !cmp.Equal(got, []any{"ovn-tls"}) {
					t.Errorf("resourceNames %v, want [ovn-tls]", got)
				}
			},
		},
		"SDNCredentials": {
			reason:  "each sdn.credentialsSecrets entry gets a Role that reads exactly that Secret",
			values:  "sdn: {credentialsSecrets: [cozy-proxmox/pve-sdn]}",
			objects: join(base, tlsRole, policies, alertRule, []string{"Role cozy-proxmox/proxmox-network-controller-sdn-pve-sdn", "RoleBinding cozy-proxmox/proxmox-network-controller-sdn-pve-sdn"}),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				r := mustFind(t, objs, "Role cozy-proxmox/proxmox-network-controller-sdn-pve-sdn")
				rules, _, _ := unstructured.NestedSlice(r.Object, "rules")
				if got := rules[0].(map[string]any)["resourceNames"]; !cmp.Equal(got, []any{"pve-sdn"}) {
					t.Errorf("resourceNames %v, want [pve-sdn]", got)
				}
			},
		},
		"PoolHealing": {
			reason:  "poolHealing.mode other than off passes the mode and grace and binds the pool healing ClusterRole, whose rules are config/rbac's",
			values:  "poolHealing: {mode: labelled, grace: 2m}",
			objects: join(base, tlsRole, policies, alertRule, []string{"ClusterRole /proxmox-network-controller-pool-healing", "ClusterRoleBinding /proxmox-network-controller-pool-healing"}),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				checkArgs(t, objs, "--pool-healing=labelled", "--pool-healing-grace=2m")
				checkRoleIsConfig(t, objs, "ClusterRole /proxmox-network-controller-pool-healing", "pool_healing_role.yaml")
			},
		},
		"FailureDomains": {
			reason:  "failureDomains.enabled passes the switch and interval and binds the failure domains ClusterRole, whose rules are config/rbac's",
			values:  "failureDomains: {enabled: true, interval: 10s}",
			objects: join(base, tlsRole, policies, alertRule, []string{"ClusterRole /proxmox-network-controller-failure-domains", "ClusterRoleBinding /proxmox-network-controller-failure-domains"}),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				checkArgs(t, objs, "--failure-domains", "--failure-domains-interval=10s")
				checkRoleIsConfig(t, objs, "ClusterRole /proxmox-network-controller-failure-domains", "failure_domains_role.yaml")
			},
		},
		"PlainMetrics": {
			reason:  "metrics.secure=false serves plain HTTP and needs no TokenReview or SubjectAccessReview",
			values:  "proxmoxNetworkController: {metrics: {secure: false, readers: [{namespace: monitoring, name: prometheus}]}, logLevel: debug, replicas: 1}",
			objects: join(base, tlsRole, policies, alertRule, []string{"ClusterRoleBinding /proxmox-network-controller-metrics-monitoring-prometheus"}),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				checkArgs(t, objs, "--metrics-secure=false", "--log-level=debug")
				checkRules(t, objs, "ClusterRole /proxmox-network-controller", "authentication.k8s.io/tokenreviews", false)
				checkRules(t, objs, "ClusterRole /proxmox-network-controller", "authorization.k8s.io/subjectaccessreviews", false)
			},
		},
		"Trunk": {
			reason: "providerNetwork.create renders the trunk ProviderNetwork with its interfaces and node choice",
			values: `providerNetwork: {create: true, name: pxtrunk, defaultInterface: ens20, customInterfaces: [{interface: eth3, nodes: [node-3]}],
  excludeNodes: [node-9], nodeSelector: {proxmox.cozystack.io/trunk: "true"}}`,
			objects: join(base, tlsRole, policies, alertRule, []string{"ProviderNetwork /pxtrunk"}),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				checkSpec(t, objs, "ProviderNetwork /pxtrunk", `{"defaultInterface":"ens20","customInterfaces":[{"interface":"eth3","nodes":["node-3"]}],
					"excludeNodes":["node-9"],"nodeSelector":{"matchLabels":{"proxmox.cozystack.io/trunk":"true"}}}`)
			},
		},
		"Zones": {
			reason: "each zone becomes a ProxmoxNetworkZone without the admission-only keys, on the package's provider network unless it names one",
			values: `zones:
- {name: zone-a, bridge: vmbr1, vlanRanges: ["100-199"], reservedVLANs: [150], mtu: 1500, uplinkVLAN: 4000, uplinkBridges: [vmbr0],
   egress: {gatewayNamespace: egress-a, externalSubnet: ext}, staticAssignments: [{namespace: t, name: net, vlan: 300}]}
- {name: zone-b, bridge: vmbr2, providerNetwork: other, vlanRanges: ["7"], namespaceSelector: {matchLabels: {tenant: b}}}`,
			objects: join(base, tlsRole, policies, alertRule, []string{"ProxmoxNetworkZone /zone-a", "ProxmoxNetworkZone /zone-b"}),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				checkSpec(t, objs, "ProxmoxNetworkZone /zone-a", `{"bridge":"vmbr1","providerNetwork":"pxtenant","vlanRanges":["100-199"],"reservedVLANs":[150],
					"mtu":1500,"egress":{"gatewayNamespace":"egress-a","externalSubnet":"ext"},"staticAssignments":[{"namespace":"t","name":"net","vlan":300}]}`)
				checkSpec(t, objs, "ProxmoxNetworkZone /zone-b", `{"bridge":"vmbr2","providerNetwork":"other","vlanRanges":["7"],"namespaceSelector":{"matchLabels":{"tenant":"b"}}}`)
			},
		},
		"Transit": {
			reason:  "transit renders its Vlan and Subnet on the trunk, with the ACL that keeps the VPCs' egress gateways apart",
			values:  `transit: {enabled: true, vlan: 120, cidr: 192.0.2.0/24, gateway: 192.0.2.1, excludeIps: [192.0.2.1..192.0.2.9], mtu: 9000}`,
			objects: join(base, tlsRole, policies, alertRule, []string{"Vlan /px-transit", "Subnet /px-transit"}),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				checkSpec(t, objs, "Vlan /px-transit", `{"id":120,"provider":"pxtenant"}`)
				checkSpec(t, objs, "Subnet /px-transit", `{"protocol":"IPv4","cidrBlock":"192.0.2.0/24","gateway":"192.0.2.1","excludeIps":["192.0.2.1..192.0.2.9"],
					"vlan":"px-transit","mtu":9000,"private":false,"acls":[
					{"direction":"from-lport","priority":2001,"match":"inport == \"localnet.px-transit\"","action":"allow-related"},
					{"direction":"from-lport","priority":2000,"match":"ip4.dst == 192.0.2.0/24 && ip4.dst != 192.0.2.1","action":"drop"}]}`)
			},
		},
		"NoAlerts": {
			reason:  "alerts.enabled=false renders no PrometheusRule",
			values:  "alerts: {enabled: false}",
			objects: join(base, tlsRole, policies),
		},
		"Dashboard": {
			reason:  "dashboard.enabled ships the dashboard as a GrafanaDashboard in the Grafana's namespace, with the chart's JSON, folder and instance selector",
			values:  "dashboard: {enabled: true, folder: network, instanceSelector: {matchLabels: {dashboards: main}}}",
			objects: join(base, tlsRole, policies, alertRule, []string{dashboardKey}),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				d := mustFind(t, objs, dashboardKey)
				spec, _, _ := unstructured.NestedMap(d.Object, "spec")
				raw, _ := spec["json"].(string)
				file, err := os.ReadFile(filepath.Join(mainChart, "dashboards", "proxmox-network.json"))
				if err != nil {
					t.Fatal(err)
				}
				if raw != string(file) {
					t.Errorf("spec.json is not dashboards/proxmox-network.json as it is")
				}
				delete(spec, "json")
				if diff := cmp.Diff(map[string]any{"folder": "network", "instanceSelector": map[string]any{"matchLabels": map[string]any{"dashboards": "main"}}}, spec); diff != "" {
					t.Errorf("spec: -want +got:\n%s", diff)
				}
			},
		},
		"DashboardNamespace": {
			reason:  "dashboard.namespace puts it beside another Grafana",
			values:  "dashboard: {enabled: true, namespace: cozy-monitoring}",
			objects: join(base, tlsRole, policies, alertRule, []string{"GrafanaDashboard cozy-monitoring/proxmox-network"}),
		},
		"AlertLabels": {
			reason:  "alerts.labels reach the PrometheusRule for the Prometheus's ruleSelector; the prune timeout is the deletion alert's wait",
			values:  "alerts: {labels: {release: kube-prometheus}}\nproxmoxNetworkController: {subnetPruneTimeout: 25m}",
			objects: join(base, tlsRole, policies, alertRule),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				r := mustFind(t, objs, alertRule[0])
				if r.GetLabels()["release"] != "kube-prometheus" {
					t.Errorf("PrometheusRule labels %v lack release=kube-prometheus", r.GetLabels())
				}
				if !strings.Contains(mustJSON(t, r.Object), `"alert":"ProxmoxNetworkDeletionHeld","annotations":{"description":"The deleted network {{ $labels.namespace }}/{{ $labels.network }} still holds its VLAN after 25m`) ||
					!strings.Contains(mustJSON(t, r.Object), `"for":"25m"`) {
					t.Errorf("the deletion alert does not wait the prune timeout: %s", mustJSON(t, r.Object))
				}
				checkArgs(t, objs, "--subnet-prune-timeout=25m")
			},
		},
		"OnlyMachineBinding": {
			reason:  "each policy follows its switch; validationActions reach every binding",
			values:  "admission: {vmNetworkNamespace: false, podNetworkNamespace: false, immutableFields: false, validationActions: [Warn, Audit]}",
			objects: join(base, tlsRole, alertRule, policies[:2]),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				b := mustFind(t, objs, "ValidatingAdmissionPolicyBinding /proxmox-network-machine-binding")
				if got, _, _ := unstructured.NestedStringSlice(b.Object, "spec", "validationActions"); !slices.Equal(got, []string{"Warn", "Audit"}) {
					t.Errorf("validationActions %v, want [Warn Audit]", got)
				}
			},
		},
		"OnlyImmutableFields": {
			reason:  "the immutable-fields policy follows its own switch",
			values:  "admission: {enabled: false, vmNetworkNamespace: false, podNetworkNamespace: false}",
			objects: join(base, tlsRole, alertRule, policies[6:]),
		},
		"NoAdmission": {
			reason:  "every policy off: none rendered",
			values:  "admission: {enabled: false, vmNetworkNamespace: false, podNetworkNamespace: false, immutableFields: false}",
			objects: join(base, tlsRole, alertRule),
		},
		"Webhook": {
			reason: "admission.webhook serves the same rules from two replicas: configuration, Service, the values it judges by, a PDB, and cert-manager's certificate; no policies",
			values: "admission: {webhook: {enabled: true}}\nproxmoxNetworkController: {replicas: 2}",
			objects: join(base, tlsRole, alertRule, []string{"ValidatingWebhookConfiguration /proxmox-network-controller",
				"Service " + namespace + "/proxmox-network-controller-webhook", "ConfigMap " + namespace + "/proxmox-network-controller-admission",
				"PodDisruptionBudget " + namespace + "/proxmox-network-controller", "Issuer " + namespace + "/proxmox-network-controller-selfsigned",
				"Certificate " + namespace + "/proxmox-network-controller-webhook"}),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				checkArgs(t, objs, "--webhook-port=9443", "--webhook-cert-dir=/etc/proxmox-network-controller/webhook",
					"--admission-config=/etc/proxmox-network-controller/admission/values.yaml")
				d := mustFind(t, objs, "Deployment "+namespace+"/proxmox-network-controller")
				if _, ok, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec", "affinity", "podAntiAffinity"); !ok {
					t.Errorf("two webhook replicas without anti-affinity")
				}
			},
		},
		"WebhookOwnCertificate": {
			reason:  "certManager=false: the Secret comes from elsewhere; one replica: no PDB, no anti-affinity",
			values:  "admission: {webhook: {enabled: true, certManager: false}}",
			objects: join(base, tlsRole, alertRule, []string{"ValidatingWebhookConfiguration /proxmox-network-controller", "Service " + namespace + "/proxmox-network-controller-webhook", "ConfigMap " + namespace + "/proxmox-network-controller-admission"}),
			check: func(t *testing.T, objs []*unstructured.Unstructured) {
				d := mustFind(t, objs, "Deployment "+namespace+"/proxmox-network-controller")
				if _, ok, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec", "affinity"); ok {
					t.Errorf("one replica with affinity")
				}
			},
		},
		"WebhookNothingEnabled": {
			reason:  "the webhook with every policy off renders no configuration",
			values:  "admission: {enabled: false, vmNetworkNamespace: false, podNetworkNamespace: false, immutableFields: false, webhook: {enabled: true, certManager: false}}",
			objects: join(base, tlsRole, alertRule, []string{"Service " + namespace + "/proxmox-network-controller-webhook", "ConfigMap " + namespace + "/proxmox-network-controller-admission"}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := mustRender(t, mainChart, values(t, tc.values))
			if diff := cmp.Diff(tc.objects, index(objs)); diff != "" {
				t.Errorf("%s\nobjects: -want +got:\n%s", tc.reason, diff)
			}
			if tc.check != nil {
				tc.check(t, objs)
			}
			for _, o := range objs {
				if l := o.GetLabels(); l["app.kubernetes.io/name"] != "proxmox-network-controller" || l["app.kubernetes.io/managed-by"] != "Helm" {
					// The admission objects are generated from the admission package.
					if !strings.HasPrefix(o.GetKind(), "Validating") {
						t.Errorf("%s lacks the chart's labels: %v", key(o), l)
					}
				}
			}
		})
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkArgs(t *testing.T, objs []*unstructured.Unstructured, want ...string) {
	t.Helper()
	got := args(t, objs)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("args %q lack %q", got, w)
		}
	}
	o := controller.DefaultOptions()
	if err := parseArgs(&o, got); err != nil {
		t.Errorf("the controller refuses the chart's args: %v", err)
	}
}

func checkSpec(t *testing.T, objs []*unstructured.Unstructured, k, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want: %v", err)
	}
	if diff := cmp.Diff(w, mustFind(t, objs, k).Object["spec"]); diff != "" {
		t.Errorf("%s spec: -want +got:\n%s", k, diff)
	}
}

// checkRules reports whether the role k grants anything on group/resource.
func checkRules(t *testing.T, objs []*unstructured.Unstructured, k, groupResource string, want bool) {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(mustFind(t, objs, k).Object, "rules")
	group, resource, _ := strings.Cut(groupResource, "/")
	got := false
	for _, r := range rules {
		m := r.(map[string]any)
		gs, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		rs, _, _ := unstructured.NestedStringSlice(m, "resources")
		got = got || slices.Contains(gs, group) && slices.Contains(rs, resource)
	}
	if got != want {
		t.Errorf("%s grants %s: %v, want %v", k, groupResource, got, want)
	}
}

// TestAdmissionEqualsPackage: for several values, the rendered policies,
// bindings and webhook configuration are exactly what the admission
// package builds from the same values, and the webhook's configuration
// file parses back to them.
func TestAdmissionEqualsPackage(t *testing.T) {
	cases := map[string]string{
		"Defaults": "",
		"Zones": `zones:
- {name: a, bridge: vmbr1, vlanRanges: ["1-10"], uplinkVLAN: 4000, uplinkBridges: [vmbr0, vmbr9], egress: {externalSubnet: ext, gatewayNamespace: egress}}
- {name: b, bridge: vmbr2, vlanRanges: ["20"], uplinkVLAN: 4000, uplinkBridges: [vmbr0]}
- {name: c, bridge: vmbr1, vlanRanges: ["30"], uplinkVLAN: 3000}
admission: {exemptNamespaces: [monitoring, egress, kube-system], validationActions: [Deny, Audit]}`,
		"Partial": "admission: {enabled: false, podNetworkNamespace: false}",
		"SDN": `zones:
- {name: a, bridge: vmbr1, vlanRanges: ["1-10"], sdn: {mode: VNets, zone: pxtenant, credentialsRef: {namespace: cozy-proxmox-network, name: pve}}}
- {name: b, bridge: vmbr2, vlanRanges: ["20"], sdn: {mode: VNets, zone: pxb, vnetPrefix: b}}
- {name: c, bridge: vmbr3, vlanRanges: ["30"], sdn: {mode: Check}}
- {name: d, bridge: vmbr4, vlanRanges: ["40"], sdn: {mode: VNets, zone: pxtenant}}`,
	}
	for name, doc := range cases {
		for _, webhook := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "/Policies", true: "/Webhook"}[webhook], func(t *testing.T) {
				vals := values(t, doc)
				adm, _ := vals["admission"].(map[string]any)
				if adm == nil {
					adm = map[string]any{}
					vals["admission"] = adm
				}
				adm["webhook"] = map[string]any{"enabled": webhook, "certManager": false}
				objs := mustRender(t, mainChart, vals)
				merged := coalesce(t, mainChart, vals)
				pkg := map[string]any{"releaseNamespace": namespace, "zones": merged["zones"], "admission": merged["admission"]}
				raw, err := yaml.Marshal(pkg)
				if err != nil {
					t.Fatal(err)
				}
				cfg, err := admission.ParseConfig(raw)
				if err != nil {
					t.Fatal(err)
				}
				var want []any
				if webhook {
					vwc, err := controller.WebhookConfiguration(cfg, namespace)
					if err != nil {
						t.Fatal(err)
					}
					if len(vwc.Webhooks) > 0 {
						want = append(want, vwc)
					}
					cm := mustFind(t, objs, "ConfigMap "+namespace+"/proxmox-network-controller-admission")
					data, _, _ := unstructured.NestedString(cm.Object, "data", "values.yaml")
					got, err := admission.ParseConfig([]byte(data))
					if err != nil {
						t.Fatalf("the webhook's --admission-config does not parse: %v", err)
					}
					if diff := cmp.Diff(cfg, got, cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("the webhook judges by other values: -want +got:\n%s", diff)
					}
				} else {
					set, err := admission.Policies(cfg)
					if err != nil {
						t.Fatal(err)
					}
					want = set.Objects()
				}
				var got []any
				for _, o := range objs {
					if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") || o.GetKind() == "ValidatingWebhookConfiguration" {
						got = append(got, withoutHelmLabels(o).Object)
					}
				}
				if diff := cmp.Diff(normalize(t, want), normalize(t, got)); diff != "" {
					t.Errorf("the chart's admission differs from the admission package's: -want +got:\n%s", diff)
				}
			})
		}
	}
}

// normalize turns objects into their JSON form, without empty metadata
// fields, sorted by kind and name.
func normalize(t *testing.T, objs []any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, o := range objs {
		var m map[string]any
		if u, ok := o.(map[string]any); ok {
			m = runtime.DeepCopyJSON(u)
		} else if err := json.Unmarshal([]byte(mustJSON(t, o)), &m); err != nil {
			t.Fatal(err)
		}
		if md, ok := m["metadata"].(map[string]any); ok {
			delete(md, "creationTimestamp")
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b map[string]any) int {
		return strings.Compare(a["kind"].(string)+a["metadata"].(map[string]any)["name"].(string), b["kind"].(string)+b["metadata"].(map[string]any)["name"].(string))
	})
	return out
}

// checkRoleIsConfig fails t unless the rules of objs' role (kind
// namespace/name) are those of config/rbac's file.
func checkRoleIsConfig(t *testing.T, objs []*unstructured.Unstructured, role, file string) {
	t.Helper()
	r := mustFind(t, objs, role)
	data, err := os.ReadFile(filepath.Join("..", "config", "rbac", file))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := yaml.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want["rules"], r.Object["rules"]); diff != "" {
		t.Errorf("%s rules: -config/rbac +chart:\n%s", role, diff)
	}
}
