package charts

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/engine"
	"github.com/pxsubstrate/pxsubstrate/network"
)

// dashboardKey is the GrafanaDashboard the chart renders with
// dashboard.enabled, in the default namespace of the Grafana instance.
const dashboardKey = "GrafanaDashboard tenant-root/proxmox-network"

// histograms are the registered histograms: a query reads them through
// their _bucket, _sum and _count series.
var histograms = []string{network.MetricNetworkReconcileSeconds, network.MetricGatewayPassSeconds, engine.MetricDuration}

// query is one PromQL expression of the dashboard and where it sits.
type query struct{ where, expr string }

// dashboardPanel is the part of a Grafana panel the checks read.
type dashboardPanel struct {
	ID         int              `json:"id"`
	Type       string           `json:"type"`
	Title      string           `json:"title"`
	Datasource map[string]any   `json:"datasource"`
	Targets    []map[string]any `json:"targets"`
	Panels     []dashboardPanel `json:"panels"`
}

// dashboardModel is the part of the dashboard JSON the checks read.
type dashboardModel struct {
	UID        string           `json:"uid"`
	Panels     []dashboardPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// renderedDashboard renders the chart with the dashboard on and decodes
// the GrafanaDashboard's spec.json.
func renderedDashboard(t *testing.T) dashboardModel {
	t.Helper()
	objs := mustRender(t, mainChart, values(t, "dashboard: {enabled: true}"))
	d := mustFind(t, objs, dashboardKey)
	raw, _, _ := unstructured.NestedString(d.Object, "spec", "json")
	var m dashboardModel
	dec := json.NewDecoder(strings.NewReader(raw))
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: spec.json is not a dashboard: %v", dashboardKey, err)
	}
	return m
}

// labelValues is Grafana's label_values(<selector>, <label>) variable query.
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// queries lists every expression of m: each panel target's expr (rows'
// nested panels included) and the selector of each label_values variable.
// A panel that is not a row without a target, or a target without an
// expr, is an error.
func queries(m dashboardModel) ([]query, error) {
	var out []query
	var errs []string
	var walk func(ps []dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if len(p.Targets) == 0 {
				errs = append(errs, fmt.Sprintf("panel %q has no query", p.Title))
			}
			for _, tg := range p.Targets {
				expr, _ := tg["expr"].(string)
				if strings.TrimSpace(expr) == "" {
					errs = append(errs, fmt.Sprintf("panel %q target %v has no expr", p.Title, tg["refId"]))
					continue
				}
				out = append(out, query{fmt.Sprintf("panel %q target %v", p.Title, tg["refId"]), expr})
			}
		}
	}
	walk(m.Panels)
	for _, v := range m.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if obj, ok := v.Query.(map[string]any); ok {
			q, _ = obj["query"].(string)
		}
		sel := labelValues.FindStringSubmatch(q)
		if sel == nil {
			errs = append(errs, fmt.Sprintf("variable %q: query %q is not label_values(<selector>, <label>)", v.Name, q))
			continue
		}
		out = append(out, query{fmt.Sprintf("variable %q", v.Name), sel[1]})
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// grafanaIntervals are the interval variables Grafana replaces with a
// duration before it sends a query; the parser gets a duration in their
// place. Any other $variable outside a string is a parse error.
var grafanaIntervals = regexp.MustCompile(`\$__(rate_interval|interval|range)\b`)

// promql is Prometheus's PromQL parser with its default options: the
// functions and syntax a Prometheus without feature flags accepts.
var promql = parser.NewParser(parser.Options{})

// metricsOf parses expr with Prometheus's PromQL parser and returns the
// metric name of every selector in it. A selector without a name is an
// error: nothing could check what it reads.
func metricsOf(expr string) ([]string, error) {
	e, err := promql.ParseExpr(grafanaIntervals.ReplaceAllString(expr, "5m"))
	if err != nil {
		return nil, err
	}
	var names []string
	var unnamed []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		var sel *parser.VectorSelector
		switch v := n.(type) {
		case *parser.VectorSelector:
			sel = v
		case *parser.MatrixSelector:
			sel, _ = v.VectorSelector.(*parser.VectorSelector)
		}
		if sel == nil {
			return nil
		}
		if sel.Name == "" {
			unnamed = append(unnamed, sel.String())
			return nil
		}
		if !slices.Contains(names, sel.Name) {
			names = append(names, sel.Name)
		}
		return nil
	})
	if len(unnamed) > 0 {
		return names, fmt.Errorf("selector %s names no metric", strings.Join(unnamed, ", "))
	}
	return names, nil
}

// checkQueries parses each query and returns an error for each one that
// does not parse, reads nothing, or reads a metric not in registered.
func checkQueries(qs []query, registered map[string]bool) []error {
	known := func(name string) bool {
		if registered[name] {
			return true
		}
		for _, h := range histograms {
			if registered[h] && (name == h+"_bucket" || name == h+"_sum" || name == h+"_count") {
				return true
			}
		}
		return false
	}
	var errs []error
	for _, q := range qs {
		names, err := metricsOf(q.expr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q: %w", q.where, q.expr, err))
			continue
		}
		if len(names) == 0 {
			errs = append(errs, fmt.Errorf("%s: %q reads no metric", q.where, q.expr))
		}
		for _, n := range names {
			if !known(n) {
				errs = append(errs, fmt.Errorf("%s reads %s, which the controller does not register", q.where, n))
			}
		}
	}
	return errs
}

// TestDashboardMetricsExist: every query of the dashboard parses with
// Prometheus's PromQL parser and reads only metrics the controller
// registers, and the dashboard has the panels it promises.
func TestDashboardMetricsExist(t *testing.T) {
	m := renderedDashboard(t)
	qs, err := queries(m)
	if err != nil {
		t.Error(err)
	}
	for _, err := range checkQueries(qs, registeredMetrics(t)) {
		t.Error(err)
	}
	read := map[string]bool{}
	for _, q := range qs {
		names, _ := metricsOf(q.expr)
		for _, n := range names {
			read[n] = true
		}
	}
	// The promised panels: VLANs used and free per zone, networks by
	// Ready reason, gateway groups and their primary chassis, groups that
	// cannot fail over, NB errors and latency.
	for _, want := range []string{
		network.MetricZoneVLANsAllocated, network.MetricZoneVLANsFree, network.MetricNetworks,
		network.MetricNetworkGatewayPrimary, network.MetricNetworkGatewayFailover,
		network.MetricGatewayNBErrors, network.MetricGatewayPassSeconds + "_bucket",
	} {
		if !read[want] {
			t.Errorf("no panel reads %s", want)
		}
	}
	if len(qs) < 10 {
		t.Errorf("%d queries found; the walk over the panels lost some", len(qs))
	}
}

// TestDashboardCheckCatchesRename: the check above fails on a dashboard
// query that names a metric the controller does not register (a renamed
// metric), one that does not parse and one whose selector names no
// metric, and passes the same query with the real name.
func TestDashboardCheckCatchesRename(t *testing.T) {
	registered := registeredMetrics(t)
	good := "sum by (zone) (cozy_proxmox_zone_vlans_free{zone=~\"$zone\"})"
	if errs := checkQueries([]query{{"good", good}}, registered); len(errs) != 0 {
		t.Fatalf("the real name is refused: %v", errs)
	}
	cases := map[string]struct{ expr, want string }{
		"Renamed":   {strings.Replace(good, "vlans_free", "vlans_available", 1), "cozy_proxmox_zone_vlans_available, which the controller does not register"},
		"Histogram": {"rate(cozy_proxmox_zone_vlans_free_bucket[$__rate_interval])", "cozy_proxmox_zone_vlans_free_bucket, which"},
		"NoParse":   {"sum by (zone) (cozy_proxmox_zone_vlans_free", "unclosed left parenthesis"},
		"Variable":  {"rate(cozy_proxmox_gateway_nb_errors_total[$window])", "cozy_proxmox_gateway_nb_errors_total"},
		"Unnamed":   {`{__name__=~"cozy_.*"}`, "names no metric"},
		"NoMetric":  {"vector(1)", "reads no metric"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := checkQueries([]query{{"panel", tc.expr}}, registered)
			if len(errs) == 0 {
				t.Fatalf("%q passed the check", tc.expr)
			}
			if !strings.Contains(errs[0].Error(), tc.want) {
				t.Errorf("error %q does not say %q", errs[0], tc.want)
			}
		})
	}
	// The same renaming inside the rendered dashboard fails it too.
	m := renderedDashboard(t)
	m.Panels = append(m.Panels, dashboardPanel{Type: "stat", Title: "renamed", Targets: []map[string]any{{"refId": "A", "expr": "cozy_proxmox_network_gateway_failovers == 0"}}})
	qs, err := queries(m)
	if err != nil {
		t.Fatal(err)
	}
	errs := checkQueries(qs, registered)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `panel "renamed" target A reads cozy_proxmox_network_gateway_failovers`) {
		t.Errorf("a panel reading a renamed metric: errors %v, want one naming it", errs)
	}
}

// TestDashboardPanels: every panel reads the dashboard's Prometheus
// variable, as Cozystack's dashboards do, and has an ID of its own; a
// panel without a query is refused by title.
func TestDashboardPanels(t *testing.T) {
	m := renderedDashboard(t)
	if m.UID == "" {
		t.Error("the dashboard has no uid: Grafana would make a new one on every import")
	}
	seen := map[int]string{}
	var walk func(ps []dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			if other, ok := seen[p.ID]; ok {
				t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
			}
			seen[p.ID] = p.Title
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if uid, _ := p.Datasource["uid"].(string); uid != "$ds_prometheus" {
				t.Errorf("panel %q reads datasource %v, want the $ds_prometheus variable", p.Title, p.Datasource)
			}
		}
	}
	walk(m.Panels)
	m.Panels = append(m.Panels, dashboardPanel{Type: "stat", Title: "empty"})
	if _, err := queries(m); err == nil || !strings.Contains(err.Error(), `panel "empty" has no query`) {
		t.Errorf("a panel without a query: %v", err)
	}
}

// FuzzMetricsOf: metricsOf never panics, and what it returns for an
// expression that parses are names of selectors that parse back.
func FuzzMetricsOf(f *testing.F) {
	for _, s := range []string{
		"sum by (zone) (cozy_proxmox_zone_vlans_free)", "rate(x[$__rate_interval])", `{__name__="a"}`,
		"histogram_quantile(0.99, sum by (le) (rate(a_bucket[5m])))", "a and on (x) b == 0", "(", "$zone",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		names, err := metricsOf(expr)
		if err != nil {
			return
		}
		for _, n := range names {
			if _, perr := promql.ParseExpr(fmt.Sprintf("{__name__=%q}", n)); perr != nil {
				t.Errorf("metricsOf(%q) returned %q, which is no metric name: %v", expr, n, perr)
			}
		}
	})
}
