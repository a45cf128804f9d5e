package charts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/internal/controller"
	"github.com/pxsubstrate/pxsubstrate/internal/controller/heal"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// alertNames are the alerts the package promises.
var alertNames = []string{
	"ProxmoxNetworkZoneNearlyExhausted", "ProxmoxNetworkZoneExhausted", "ProxmoxNetworkDeletionHeld", "ProxmoxNetworkGatewayNotReady", "ProxmoxNetworkGatewayNoFailover",
	"ProxmoxNetworkOVNNBUnreachable", "ProxmoxNetworkVLANAllocationErrors", "ProxmoxNetworkControllerNoLeader", "ProxmoxNetworkReconcileErrors",
	"ProxmoxPoolHealingFailing",
}

// registeredMetrics is every metric name the controller process exports:
// the network metrics as network.NewMetrics registers them, read back from
// a registry, the engine's and the leader gauge.
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	if _, err := network.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := heal.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{controller.MetricLeader: true}
	ch := make(chan *prometheus.Desc, 64)
	go func() { reg.Describe(ch); close(ch) }()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		if m := fq.FindStringSubmatch(d.String()); m != nil {
			registered[m[1]] = true
		}
	}
	for _, m := range []string{engine.MetricReconciles, engine.MetricErrors, engine.MetricDuration, engine.MetricQueueDepth} {
		registered[m] = true
	}
	return registered
}

// rules renders the chart's PrometheusRule with the default values and
// returns its spec (Prometheus's rule file format).
func rules(t *testing.T) map[string]any {
	t.Helper()
	objs := mustRender(t, mainChart, values(t, ""))
	r := mustFind(t, objs, "PrometheusRule "+namespace+"/proxmox-network-controller")
	spec, _, _ := unstructured.NestedMap(r.Object, "spec")
	return spec
}

// promtool returns the promtool binary hack/promtool.sh built.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PXSUBSTRATE_PROMTOOL"); p != "" {
		return p
	}
	out, err := exec.Command("../hack/promtool.sh").Output()
	if err != nil {
		t.Fatalf("hack/promtool.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestAlerts runs `promtool check rules` on the rendered rules and
// `promtool test rules` with proxmox-network/tests/alerts_test.yaml, whose
// synthetic series fire each alert and leave it silent.
func TestAlerts(t *testing.T) {
	spec := rules(t)
	dir := t.TempDir()
	b, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(mainChart, "tests", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	tool := promtool(t)
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(tool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Every alert is tested firing and silent.
	for _, a := range alertNames {
		if n := strings.Count(string(tests), "alertname: "+a+"\n"); n < 2 {
			t.Errorf("alerts_test.yaml evaluates %s %d times; test it firing and silent", a, n)
		}
	}
}

// TestAlertMetricsExist: every metric an alert reads is one the controller
// registers, and the rule file holds exactly the promised alerts.
func TestAlertMetricsExist(t *testing.T) {
	registered := registeredMetrics(t)
	spec := rules(t)
	var alerts []string
	metric := regexp.MustCompile(`\b(cozy_proxmox_[a-z0-9_]+|pxsubstrate_[a-z0-9_]+)\b`)
	groups, _ := spec["groups"].([]any)
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			rule := r.(map[string]any)
			name, expr := rule["alert"].(string), rule["expr"].(string)
			alerts = append(alerts, name)
			used := metric.FindAllString(expr, -1)
			if len(used) == 0 {
				t.Errorf("%s reads no controller metric: %s", name, expr)
			}
			for _, m := range used {
				if !registered[m] {
					t.Errorf("%s reads %s, which the controller does not register", name, m)
				}
			}
		}
	}
	slices.Sort(alerts)
	want := slices.Sorted(slices.Values(alertNames))
	if !slices.Equal(alerts, want) {
		t.Errorf("alerts %v, want %v", alerts, want)
	}
}
