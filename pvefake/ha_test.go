package pvefake_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pxsubstrate/pxsubstrate/pveacl"
	"github.com/pxsubstrate/pxsubstrate/pvefake"
)

// send sends a form request and returns the status line and body.
func send(t *testing.T, srv *pvefake.Server, method, path, auth string, form url.Values) (string, string) {
	t.Helper()
	if form == nil || method == "GET" || method == "DELETE" {
		if len(form) > 0 {
			path += "?" + form.Encode()
		}
		return raw(t, srv, method, path, auth, nil)
	}
	return raw(t, srv, method, path, auth, strings.NewReader(form.Encode()))
}

// haToken is a privilege-separated token with the roles on / (none: no ACL).
func haToken(t *testing.T, srv *pvefake.Server, user string, roles ...string) string {
	t.Helper()
	must(t, srv.AddUser(user, pvefake.UserSpec{}))
	secret, err := srv.AddToken(user, "tk", pvefake.TokenSpec{Privsep: true})
	must(t, err)
	if len(roles) > 0 {
		must(t, srv.SetACL("/", pveacl.KindToken, user+"!tk", true, roles...))
		must(t, srv.SetACL("/", pveacl.KindUser, user, true, roles...))
	}
	return "PVEAPIToken=" + user + "!tk=" + secret
}

func data(t *testing.T, body string) any {
	t.Helper()
	var env struct{ Data any }
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		t.Fatalf("cannot decode %q: %v", body, err)
	}
	return env.Data
}

// resource returns a guest's entry in /cluster/resources.
func resource(t *testing.T, srv *pvefake.Server, vmid int) map[string]any {
	t.Helper()
	status, body := send(t, srv, "GET", "/cluster/resources", rootAuth(srv), url.Values{"type": {"vm"}})
	if !strings.HasPrefix(status, "200") {
		t.Fatalf("GET /cluster/resources: %s %s", status, body)
	}
	for _, e := range data(t, body).([]any) {
		m := e.(map[string]any)
		if int(m["vmid"].(float64)) == vmid {
			return m
		}
	}
	t.Fatalf("VM %d not in /cluster/resources", vmid)
	return nil
}

func haServer(t *testing.T, v pveacl.Version, opts ...pvefake.Option) *pvefake.Server {
	t.Helper()
	srv, _ := start(t, append([]pvefake.Option{pvefake.WithVersion(v), pvefake.WithCluster("lab"),
		pvefake.WithNodes("pve1", "pve2", "pve3")}, opts...)...)
	for i, n := range []string{"pve1", "pve2", "pve3"} {
		must(t, srv.AddVM(pvefake.VMSpec{VMID: 100 + i, Node: n, Running: true}))
	}
	return srv
}

func wantStatus(t *testing.T, what, status, body, want string) {
	t.Helper()
	if !strings.HasPrefix(status, want) {
		t.Errorf("%s: %s %s; want %s", what, status, body, want)
	}
}

// TestHAPermissions: every HA method with root, with a token holding the
// privilege (PVEAuditor for reads, Sys.Console through a custom role for
// changes) and with one lacking it, as pve-ha-manager's API declares them.
func TestHAPermissions(t *testing.T) {
	for _, v := range []pveacl.Version{pveacl.PVE8, pveacl.PVE9} {
		srv := haServer(t, v)
		must(t, srv.AddRole("HAConsole", "Sys.Console"))
		auditor := haToken(t, srv, "auditor@pve", "PVEAuditor")
		console := haToken(t, srv, "console@pve", "HAConsole")
		nobody := haToken(t, srv, "nobody@pve")
		type req struct {
			method, path string
			form         url.Values
			priv         string
		}
		cases := []req{
			{"GET", "/cluster/ha/resources", nil, "Sys.Audit"},
			{"POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}}, "Sys.Console"},
			{"GET", "/cluster/ha/resources/vm:100", nil, "Sys.Audit"},
			{"PUT", "/cluster/ha/resources/vm:100", url.Values{"comment": {"x"}}, "Sys.Console"},
		}
		if v == pveacl.PVE8 {
			cases = append(cases, req{"POST", "/cluster/ha/groups", url.Values{"group": {"g1"}, "nodes": {"pve1"}}, "Sys.Console"},
				req{"GET", "/cluster/ha/groups", nil, "Sys.Audit"}, req{"GET", "/cluster/ha/groups/g1", nil, "Sys.Audit"},
				req{"PUT", "/cluster/ha/groups/g1", url.Values{"nodes": {"pve1,pve2:2"}}, "Sys.Console"},
				req{"DELETE", "/cluster/ha/groups/g1", nil, "Sys.Console"})
		} else {
			cases = append(cases, req{"POST", "/cluster/ha/resources", url.Values{"sid": {"vm:101"}}, "Sys.Console"},
				req{"POST", "/cluster/ha/rules", url.Values{"rule": {"r1"}, "type": {"resource-affinity"},
					"resources": {"vm:100,vm:101"}, "affinity": {"negative"}}, "Sys.Console"},
				req{"GET", "/cluster/ha/rules", nil, "Sys.Audit"}, req{"GET", "/cluster/ha/rules/r1", nil, "Sys.Audit"},
				req{"PUT", "/cluster/ha/rules/r1", url.Values{"type": {"resource-affinity"}, "comment": {"spread"}}, "Sys.Console"},
				req{"DELETE", "/cluster/ha/rules/r1", nil, "Sys.Console"})
		}
		cases = append(cases, req{"DELETE", "/cluster/ha/resources/vm:100", nil, "Sys.Console"})
		for _, c := range cases {
			what := fmt.Sprint("PVE ", int(v)) + " " + c.method + " " + c.path
			lacking, allowed := nobody, auditor
			if c.priv == "Sys.Console" {
				lacking, allowed = auditor, console
			}
			status, body := send(t, srv, c.method, c.path, lacking, c.form)
			wantStatus(t, what+" without "+c.priv, status, body, "403 Permission check failed (/, "+c.priv+")")
			status, body = send(t, srv, c.method, c.path, allowed, c.form)
			wantStatus(t, what+" with "+c.priv, status, body, "200")
		}
		// and root, once the DELETE above removed the resource
		status, body := send(t, srv, "POST", "/cluster/ha/resources", rootAuth(srv), url.Values{"sid": {"100"}, "state": {"stopped"}})
		wantStatus(t, fmt.Sprint("PVE ", int(v))+" root POST", status, body, "200")
	}
}

// TestHAParameters: unknown parameters are refused by name, and the
// version's own parameters only on that version.
func TestHAParameters(t *testing.T) {
	cases := []struct {
		v            pveacl.Version
		method, path string
		form         url.Values
		want         string
	}{
		{pveacl.PVE9, "POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "bogus": {"1"}},
			`"bogus":"property is not defined in schema and the schema does not allow additional properties"`},
		{pveacl.PVE8, "POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "failback": {"0"}},
			`"failback":"property is not defined in schema`},
		{pveacl.PVE9, "POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "failback": {"0"}}, `{"data":null}`},
		{pveacl.PVE9, "POST", "/cluster/ha/resources", url.Values{"sid": {"vm100"}}, `"sid":"invalid format - value does not look like a valid ha resource id"`},
		{pveacl.PVE9, "POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "state": {"running"}},
			`"state":"value 'running' does not have a value in the enumeration 'started, stopped, enabled, disabled, ignored'"`},
		{pveacl.PVE9, "POST", "/cluster/ha/resources", url.Values{"sid": {"vm:100"}, "group": {"g1"}},
			`invalid parameter 'group': ha groups have been migrated to rules`},
		{pveacl.PVE9, "POST", "/cluster/ha/resources", url.Values{"sid": {"vm:999"}}, `resource 'vm:999' does not exist in cluster`},
		{pveacl.PVE9, "POST", "/cluster/ha/rules", url.Values{"rule": {"r1"}, "type": {"node-affinity"},
			"resources": {"vm:100"}, "nodes": {"pve1"}, "affinity": {"negative"}}, `"affinity":"property is not defined in schema`},
		{pveacl.PVE9, "POST", "/cluster/ha/rules", url.Values{"rule": {"r1"}, "type": {"resource-affinity"},
			"resources": {"vm:100,vm:101"}}, `"affinity":"property is missing and it is not optional"`},
		{pveacl.PVE9, "POST", "/cluster/ha/rules", url.Values{"rule": {"r1"}, "type": {"node-affinity"},
			"resources": {"vm:100"}, "nodes": {"pve1:x"}}, `"nodes":"invalid format - value does not look like a valid ha node"`},
		{pveacl.PVE9, "GET", "/cluster/ha/groups", nil, `cannot index groups: ha groups have been migrated to rules`},
		{pveacl.PVE9, "POST", "/cluster/ha/groups", url.Values{"group": {"g1"}, "nodes": {"pve1"}},
			`cannot create group: ha groups have been migrated to rules`},
		{pveacl.PVE8, "GET", "/cluster/ha/rules", nil, `Method 'GET /cluster/ha/rules' not implemented`},
		{pveacl.PVE8, "POST", "/cluster/ha/groups", url.Values{"group": {"g1"}, "nodes": {"pve1:x"}},
			`"nodes":"invalid format - value does not look like a valid ha group node"`},
		{pveacl.PVE8, "DELETE", "/cluster/ha/resources/vm:100", url.Values{"purge": {"1"}}, `"purge":"property is not defined in schema`},
	}
	for _, c := range cases {
		srv := haServer(t, c.v)
		status, body := send(t, srv, c.method, c.path, rootAuth(srv), c.form)
		if !strings.Contains(status+" "+body, c.want) {
			t.Errorf("PVE %d %s %s %v: %s %s; want %s", c.v, c.method, c.path, c.form, status, body, c.want)
		}
	}
}

// TestHAResourcesAndRules: the configuration as the API shows it, the
// CRM acting on the requested state, the feasibility checks at create and
// the purge of a deleted resource from its rules.
func TestHAResourcesAndRules(t *testing.T) {
	srv := haServer(t, pveacl.PVE9)
	root := rootAuth(srv)
	post := func(path string, form url.Values, want string) {
		t.Helper()
		status, body := send(t, srv, "POST", path, root, form)
		if !strings.Contains(status+" "+body, want) {
			t.Errorf("POST %s %v: %s %s; want %s", path, form, status, body, want)
		}
	}
	post("/cluster/ha/resources", url.Values{"sid": {"100"}, "state": {"stopped"}, "max_restart": {"2"}}, "200")
	post("/cluster/ha/resources", url.Values{"sid": {"vm:101"}}, "200")
	post("/cluster/ha/resources", url.Values{"sid": {"vm:101"}}, "create resource failed: resource ID 'vm:101' already defined")
	_, body := send(t, srv, "GET", "/cluster/ha/resources/vm:100", root, nil)
	got := data(t, body).(map[string]any)
	if got["sid"] != "vm:100" || got["state"] != "stopped" || got["max_restart"] != float64(2) || got["type"] != "vm" || len(got["digest"].(string)) != 40 {
		t.Errorf("GET vm:100: %v", got)
	}
	if r := resource(t, srv, 100); r["status"] != "stopped" || r["hastate"] != "stopped" {
		t.Errorf("a resource with state stopped: the guest is %v", r)
	}
	post("/cluster/ha/rules", url.Values{"rule": {"spread"}, "type": {"resource-affinity"}, "affinity": {"negative"},
		"resources": {"vm:100,vm:102"}}, "cannot use unmanaged resource(s) vm:102.")
	post("/cluster/ha/rules", url.Values{"rule": {"spread"}, "type": {"resource-affinity"}, "affinity": {"negative"},
		"resources": {"vm:100"}}, `Rule 'spread' is invalid.\nresources: rule is ineffective as there are less than two resources`)
	post("/cluster/ha/rules", url.Values{"rule": {"spread"}, "type": {"resource-affinity"}, "affinity": {"negative"},
		"resources": {"vm:101,vm:100"}}, "200")
	post("/cluster/ha/rules", url.Values{"rule": {"together"}, "type": {"resource-affinity"}, "affinity": {"positive"},
		"resources": {"vm:100,vm:101"}}, "rule shares two or more resources with a negative resource affinity rule")
	post("/cluster/ha/rules", url.Values{"rule": {"pin"}, "type": {"node-affinity"}, "nodes": {"pve1:2,pve2"},
		"resources": {"vm:100"}, "strict": {"1"}}, "resources are in a resource affinity rule and cannot be in a node affinity rule with multiple priorities")
	post("/cluster/ha/rules", url.Values{"rule": {"pin"}, "type": {"node-affinity"}, "nodes": {"pve9"},
		"resources": {"vm:100"}}, "cannot use non-existant node(s) pve9.")
	_, body = send(t, srv, "GET", "/cluster/ha/rules/spread", root, nil)
	rule := data(t, body).(map[string]any)
	if rule["resources"] != "vm:100,vm:101" || rule["affinity"] != "negative" || rule["order"] != float64(1) {
		t.Errorf("GET rule spread: %v", rule)
	}
	status, body := send(t, srv, "DELETE", "/cluster/ha/resources/vm:101", root, nil)
	wantStatus(t, "DELETE vm:101", status, body, "200")
	_, body = send(t, srv, "GET", "/cluster/ha/rules/spread", root, nil)
	if rule := data(t, body).(map[string]any); rule["resources"] != "vm:100" ||
		!strings.Contains(rule["errors"].(map[string]any)["resources"].(string), "less than two resources") {
		t.Errorf("after the purge of vm:101 the rule is %v", rule)
	}
}

// TestHAManagedDestroy: qemu-server refuses to destroy a guest that is an
// HA resource unless purge is set, so a client that never removes the
// resource (capmox) cannot delete its VM; once the resource is gone, or
// with purge, the destroy works, and purge removes the resource.
func TestHAManagedDestroy(t *testing.T) {
	for _, v := range []pveacl.Version{pveacl.PVE8, pveacl.PVE9} {
		srv := haServer(t, v)
		c := client(srv, srv.RootTokenID, srv.RootSecret)
		root := rootAuth(srv)
		for _, sid := range []string{"vm:100", "vm:101"} {
			status, body := send(t, srv, "POST", "/cluster/ha/resources", root, url.Values{"sid": {sid}, "state": {"stopped"}})
			wantStatus(t, "POST "+sid, status, body, "200")
		}
		node, err := c.Node(ctx, "pve1")
		must(t, err)
		vm, err := node.VirtualMachine(ctx, 100)
		must(t, err)
		if vm.HA.Managed != 1 {
			t.Errorf("PVE %d: status/current of an HA resource: ha %+v", v, vm.HA)
		}
		_, err = vm.Delete(ctx, nil)
		wantMessage(t, fmt.Sprint("PVE ", int(v))+" destroy of an HA resource", err, "unable to remove VM 100 - used in HA resources and purge parameter not set.")
		status, body := send(t, srv, "DELETE", "/cluster/ha/resources/vm:100", root, nil)
		wantStatus(t, "DELETE vm:100", status, body, "200")
		must(t, wait(vm.Delete(ctx, nil)))
		if _, _, ok := srv.VMConfig(100); ok {
			t.Errorf("PVE %d: VM 100 still exists after its resource went", v)
		}
		status, body = send(t, srv, "DELETE", "/nodes/pve2/qemu/101", root, url.Values{"purge": {"1"}})
		wantStatus(t, "destroy with purge", status, body, "200")
		if _, _, ok := srv.VMConfig(101); ok {
			t.Errorf("PVE %d: VM 101 still exists after a destroy with purge", v)
		}
		_, body = send(t, srv, "GET", "/cluster/ha/resources", root, nil)
		if got := data(t, body).([]any); len(got) != 0 {
			t.Errorf("PVE %d: resources left after the purge: %v", v, got)
		}
	}
}

// TestHAStartStop: starting and stopping an HA-managed guest goes through
// the HA manager (hastart, hastop) and leaves the requested state.
func TestHAStartStop(t *testing.T) {
	srv := haServer(t, pveacl.PVE9)
	c := client(srv, srv.RootTokenID, srv.RootSecret)
	status, body := send(t, srv, "POST", "/cluster/ha/resources", rootAuth(srv), url.Values{"sid": {"vm:100"}})
	wantStatus(t, "POST vm:100", status, body, "200")
	node, err := c.Node(ctx, "pve1")
	must(t, err)
	vm, err := node.VirtualMachine(ctx, 100)
	must(t, err)
	task, err := vm.Stop(ctx)
	must(t, wait(task, err))
	if !strings.Contains(string(task.UPID), ":hastop:100:") {
		t.Errorf("stop of an HA resource: task %s, want hastop", task.UPID)
	}
	_, body = send(t, srv, "GET", "/cluster/ha/resources/vm:100", rootAuth(srv), nil)
	if got := data(t, body).(map[string]any); got["state"] != "stopped" {
		t.Errorf("after hastop the resource is %v", got)
	}
	if r := resource(t, srv, 100); r["status"] != "stopped" {
		t.Errorf("after hastop the guest is %v", r)
	}
	task, err = vm.Start(ctx)
	must(t, wait(task, err))
	if r := resource(t, srv, 100); r["status"] != "running" || r["hastate"] != "started" || !strings.Contains(string(task.UPID), ":hastart:") {
		t.Errorf("after hastart (%s) the guest is %v", task.UPID, r)
	}
}

// spread makes HA resources of sids and a negative resource affinity rule
// "workers" of the resources in list.
func spread(t *testing.T, srv *pvefake.Server, sids []string, list string) {
	t.Helper()
	for _, sid := range sids {
		status, body := send(t, srv, "POST", "/cluster/ha/resources", rootAuth(srv), url.Values{"sid": {sid}})
		wantStatus(t, "POST "+sid, status, body, "200")
	}
	status, body := send(t, srv, "POST", "/cluster/ha/rules", rootAuth(srv), url.Values{"rule": {"workers"},
		"type": {"resource-affinity"}, "affinity": {"negative"}, "resources": {list}})
	wantStatus(t, "POST rule", status, body, "200")
}

// TestHANodeLoss: three nodes, VMs 100 (pve1) and 101 (pve2) kept apart by
// a negative resource affinity rule, two more HA services on pve3 so that
// the scheduler alone would pick pve2, and a guest without HA on pve1.
// Losing pve1 shows it offline and its guests unknown; after the fence
// delay VM 100 runs on pve3, the node without VM 101; the other guest stays
// on pve1 and stays stopped when pve1 is back.
func TestHANodeLoss(t *testing.T) {
	clk := &clock{now: time.Unix(1_800_000_000, 0)}
	srv := haServer(t, pveacl.PVE9, pvefake.WithClock(clk.Now), pvefake.WithHAFenceDelay(2*time.Minute))
	root := rootAuth(srv)
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 103, Node: "pve3", Running: true}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 104, Node: "pve1", Running: true}))
	spread(t, srv, []string{"vm:100", "vm:101", "vm:102", "vm:103"}, "vm:100,vm:101")

	must(t, srv.SetNodeOnline("pve1", false))
	for _, id := range []int{100, 104} {
		if r := resource(t, srv, id); r["status"] != "unknown" || r["node"] != "pve1" {
			t.Errorf("VM %d on the lost node: %v", id, r)
		}
	}
	if r := resource(t, srv, 100); r["hastate"] != "fence" {
		t.Errorf("VM 100 before the fence delay: hastate %v, want fence", r["hastate"])
	}
	_, body := send(t, srv, "GET", "/cluster/status", root, nil)
	for _, e := range data(t, body).([]any) {
		m := e.(map[string]any)
		if m["name"] == "pve1" && m["online"] != float64(0) {
			t.Errorf("/cluster/status shows the lost node as %v", m)
		}
	}
	_, body = send(t, srv, "GET", "/nodes", root, nil)
	for _, e := range data(t, body).([]any) {
		if m := e.(map[string]any); m["node"] == "pve1" && m["status"] != "offline" {
			t.Errorf("/nodes shows the lost node as %v", m)
		}
	}
	status, _ := send(t, srv, "GET", "/nodes/pve1/qemu", root, nil)
	wantStatus(t, "GET /nodes/pve1/qemu", status, "", "595")

	clk.Add(2 * time.Minute)
	if r := resource(t, srv, 100); r["node"] != "pve3" || r["status"] != "running" || r["hastate"] != "started" {
		t.Errorf("VM 100 after the fence delay: %v; want running on pve3", r)
	}
	if r := resource(t, srv, 104); r["node"] != "pve1" || r["status"] != "unknown" {
		t.Errorf("VM 104 (no HA) after the fence delay: %v; want it left on pve1", r)
	}
	log := strings.Join(srv.HALog(), "\n")
	if !strings.Contains(log, "recover service 'vm:100' from fenced node 'pve1' to node 'pve3'") {
		t.Errorf("HA log:\n%s", log)
	}

	must(t, srv.SetNodeOnline("pve1", true))
	if r := resource(t, srv, 104); r["node"] != "pve1" || r["status"] != "stopped" {
		t.Errorf("VM 104 with pve1 back: %v; want stopped on pve1", r)
	}
	if r := resource(t, srv, 100); r["node"] != "pve3" {
		t.Errorf("VM 100 with pve1 back: %v; want it to stay on pve3", r)
	}
}

// TestHANodeLossNotEnoughNodes: three VMs kept apart on three nodes; when
// one node is lost no node may take its VM, which stays in recovery until
// the node is back, where it starts again.
func TestHANodeLossNotEnoughNodes(t *testing.T) {
	srv := haServer(t, pveacl.PVE9, pvefake.WithHAFenceDelay(0))
	spread(t, srv, []string{"vm:100", "vm:101", "vm:102"}, "vm:100,vm:101,vm:102")
	must(t, srv.SetNodeOnline("pve2", false))
	if r := resource(t, srv, 101); r["node"] != "pve2" || r["hastate"] != "recovery" {
		t.Errorf("VM 101 with no node to take it: %v; want recovery on pve2", r)
	}
	must(t, srv.SetNodeOnline("pve2", true))
	if r := resource(t, srv, 101); r["node"] != "pve2" || r["status"] != "running" || r["hastate"] != "started" {
		t.Errorf("VM 101 with pve2 back: %v; want running on pve2", r)
	}
}

// TestHANodeLossGroups: on PVE 8 a restricted group decides the recovery
// node, even when another node runs fewer services.
func TestHANodeLossGroups(t *testing.T) {
	srv := haServer(t, pveacl.PVE8, pvefake.WithHAFenceDelay(0))
	root := rootAuth(srv)
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 103, Node: "pve3", Running: true}))
	status, body := send(t, srv, "POST", "/cluster/ha/groups", root, url.Values{"group": {"g1"}, "nodes": {"pve1:2,pve3"}, "restricted": {"1"}})
	wantStatus(t, "POST group", status, body, "200")
	for _, f := range []url.Values{{"sid": {"vm:100"}, "group": {"g1"}}, {"sid": {"vm:102"}}, {"sid": {"vm:103"}}} {
		status, body := send(t, srv, "POST", "/cluster/ha/resources", root, f)
		wantStatus(t, "POST resource", status, body, "200")
	}
	status, body = send(t, srv, "DELETE", "/cluster/ha/groups/g1", root, nil)
	wantStatus(t, "DELETE a used group", status, body, "500 delete ha group failed: ha group is used by service 'vm:100'")
	must(t, srv.SetNodeOnline("pve1", false))
	if r := resource(t, srv, 100); r["node"] != "pve3" || r["status"] != "running" {
		t.Errorf("VM 100 in group g1 (pve1:2,pve3): %v; want running on pve3", r)
	}
}

// TestHASeparatesRunningServices: on PVE 9 a negative resource affinity
// rule over two running services on one node live-migrates the first (by
// SID) to a node of its own, as the CRM's next_state_started does; on
// PVE 8, which has no such rules, nothing moves.
func TestHASeparatesRunningServices(t *testing.T) {
	srv := haServer(t, pveacl.PVE9)
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 110, Node: "pve1", Running: true}))
	must(t, srv.AddVM(pvefake.VMSpec{VMID: 111, Node: "pve1", Running: true}))
	spread(t, srv, []string{"vm:110", "vm:111"}, "vm:110,vm:111")
	a, b := resource(t, srv, 110), resource(t, srv, 111)
	if a["node"] == b["node"] || a["status"] != "running" || b["status"] != "running" {
		t.Errorf("VMs kept apart still share a node: %v and %v", a, b)
	}
	if b["node"] != "pve1" {
		t.Errorf("VM 111 moved to %v; the first SID (vm:110) moves, the other stays", b["node"])
	}
	log := strings.Join(srv.HALog(), "\n")
	if !strings.Contains(log, "migrate service 'vm:110' to node '"+a["node"].(string)+"' (running)") {
		t.Errorf("HA log:\n%s", log)
	}

	old := haServer(t, pveacl.PVE8)
	must(t, old.AddVM(pvefake.VMSpec{VMID: 110, Node: "pve1", Running: true}))
	must(t, old.AddVM(pvefake.VMSpec{VMID: 111, Node: "pve1", Running: true}))
	for _, sid := range []string{"vm:110", "vm:111"} {
		status, body := send(t, old, "POST", "/cluster/ha/resources", rootAuth(old), url.Values{"sid": {sid}})
		wantStatus(t, "POST "+sid, status, body, "200")
	}
	if a, b := resource(t, old, 110), resource(t, old, 111); a["node"] != "pve1" || b["node"] != "pve1" {
		t.Errorf("PVE 8 moved services: %v and %v", a, b)
	}
}
