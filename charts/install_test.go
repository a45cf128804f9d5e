package charts

import (
	"context"
	"os"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/controller/controllertest"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
)

// helmConfig is Helm's action configuration for namespace on the API
// server of the kubeconfig at path, releases stored in Secrets.
func helmConfig(t testing.TB, path, ns string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &path, &ns
	c := new(action.Configuration)
	if err := c.Init(flags, ns, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	return c
}

// install runs `helm install name ./chart -n ns` with vals.
func install(t testing.TB, cfg *action.Configuration, chart, ns string, vals map[string]any) error {
	t.Helper()
	ch, err := loader.Load(chart)
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace = chart, ns, true
	_, err = in.RunWithContext(context.Background(), ch, vals)
	return err
}

func uninstall(t testing.TB, cfg *action.Configuration, name string) {
	t.Helper()
	if _, err := action.NewUninstall(cfg).Run(name); err != nil {
		t.Fatalf("helm uninstall %s: %v", name, err)
	}
}

// everything turns every values branch on at once (the webhook mode is
// installed separately: it replaces the policies).
const everything = `
providerNetwork: {create: true, name: pxtrunk, defaultInterface: ens19, customInterfaces: [{interface: eth3, nodes: [node-3]}], nodeSelector: {trunk: "yes"}}
zones:
- {name: zone-a, bridge: vmbr1, vlanRanges: ["100-199"], reservedVLANs: [150], mtu: 1500, uplinkVLAN: 4000, uplinkBridges: [vmbr0], egress: {externalSubnet: ovn-external, gatewayNamespace: egress-a}}
- {name: zone-b, bridge: vmbr2, providerNetwork: other, vlanRanges: ["7"], staticAssignments: [{namespace: t, name: net, vlan: 300}]}
transit: {enabled: true, vlan: 120, cidr: 192.0.2.0/24, gateway: 192.0.2.1, excludeIps: [192.0.2.1..192.0.2.9]}
proxmoxNetworkController: {metrics: {readers: [{namespace: monitoring, name: prometheus}]}}
alerts: {labels: {release: kube-prometheus}}
`

// TestInstall installs the charts with Helm's SDK on a real API server
// holding the upstream CRDs (Kube-OVN, capmox, IPAM, PrometheusRule):
// the main chart alone is refused (its zones need the CRDs chart), then
// both install in order and every object is on the server; both uninstall
// in the reverse order and leave nothing behind; the webhook variant
// installs too.
func TestInstall(t *testing.T) {
	cfg, admin := startAPIServer(t)
	controllertest.Create(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cozy-kubeovn"}})
	path := testenv.KubeconfigFile(t, cfg, "")
	hc := helmConfig(t, path, namespace)

	vals := values(t, everything)
	err := install(t, hc, mainChart, namespace, vals)
	if err == nil || !strings.Contains(err.Error(), "ProxmoxNetworkZone") {
		t.Fatalf("proxmox-network installed before its CRDs (err %v); the zones need proxmox-network-crds first", err)
	}
	uninstallFailed(t, hc, mainChart)

	if err := install(t, hc, crdsChart, namespace, nil); err != nil {
		t.Fatalf("helm install %s: %v", crdsChart, err)
	}
	if err := install(t, hc, mainChart, namespace, vals); err != nil {
		t.Fatalf("helm install %s: %v", mainChart, err)
	}
	want := mustRender(t, mainChart, vals)
	checkOnServer(t, admin, want, true)

	uninstall(t, hc, mainChart)
	checkOnServer(t, admin, want, false)
	crds := mustRender(t, crdsChart, nil)
	uninstall(t, hc, crdsChart)
	checkOnServer(t, admin, crds, false)

	t.Run("Webhook", func(t *testing.T) {
		if err := install(t, hc, crdsChart, namespace, nil); err != nil {
			t.Fatal(err)
		}
		// cert-manager's objects are checked by the render tests; here the
		// Secret would come from elsewhere.
		wv := values(t, "admission: {webhook: {enabled: true, certManager: false}}\nproxmoxNetworkController: {replicas: 2}\nzones: [{name: z, bridge: vmbr1, vlanRanges: ['1-9']}]")
		if err := install(t, hc, mainChart, namespace, wv); err != nil {
			t.Fatal(err)
		}
		checkOnServer(t, admin, mustRender(t, mainChart, wv), true)
		uninstall(t, hc, mainChart)
		uninstall(t, hc, crdsChart)
	})
}

// uninstallFailed removes the release a refused install left behind.
func uninstallFailed(t testing.TB, cfg *action.Configuration, name string) {
	t.Helper()
	if _, err := action.NewUninstall(cfg).Run(name); err != nil && !strings.Contains(err.Error(), "not found") {
		t.Fatalf("helm uninstall of the failed %s: %v", name, err)
	}
}

// checkOnServer: each object is on the server (present) or gone.
func checkOnServer(t *testing.T, c client.Client, objs []*unstructured.Unstructured, present bool) {
	t.Helper()
	for _, o := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		err := c.Get(context.Background(), client.ObjectKeyFromObject(o), got)
		switch {
		case present && err != nil:
			t.Errorf("%s is not on the API server: %v", key(o), err)
		case !present && err == nil && got.GetDeletionTimestamp() == nil && o.GetKind() != "CustomResourceDefinition":
			t.Errorf("%s is still on the API server after helm uninstall", key(o))
		case !present && err != nil && !apierrors.IsNotFound(err) && !strings.Contains(err.Error(), "no matches for kind"):
			t.Errorf("%s: %v", key(o), err)
		}
	}
}

// startAPIServer starts kube-apiserver with the upstream CRDs the charts'
// objects need (Kube-OVN, capmox, Cluster API, IPAM, PrometheusRule) and
// without ours: the CRDs chart installs those.
func startAPIServer(t *testing.T) (*rest.Config, client.Client) {
	t.Helper()
	cfg, admin := testenv.StartAPIServer(t, testenv.APIServerOptions{
		Scheme:       controllertest.Scheme(),
		UpstreamCRDs: []string{"kube-ovn-v1.15.24", "capmox-v0.9.0"},
		CAPIIPAM:     true,
		CAPI:         true,
	})
	installPrometheusRuleCRD(t, admin)
	return cfg, admin
}

// installPrometheusRuleCRD creates the PrometheusRule CRD that
// hack/prometheus-crds.sh generates from prometheus-operator's module.
func installPrometheusRuleCRD(t *testing.T, c client.Client) {
	t.Helper()
	installCRDFile(t, c, os.Getenv("PXSUBSTRATE_PROMETHEUS_CRDS"), "monitoring.coreos.com_prometheusrules.yaml", "hack/prometheus-crds.sh")
}
