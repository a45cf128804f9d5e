package lab_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/nodeagent"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
	"github.com/pxsubstrate/pxsubstrate/verify"
)

// checkCCMInitialised asserts, once a tenant's workers run, what the real
// Proxmox CCM v0.7.0 did for them: the workers' kubelets registered their
// Nodes as with --cloud-provider=external (tainted uninitialized, no
// providerID), and the CCM, run from the rendered <cluster>-pccm
// Deployment with the tenant's own CCM token, found each VM by name or
// SMBIOS UUID and set providerID proxmox://<SMBIOS UUID> (its capmox
// mode), topology.kubernetes.io/region (the credentials' region) and zone
// (the VM's Proxmox node), and removed the taint; Cluster API then paired
// each Machine with its Node by that providerID. The CCM's process runs
// exactly the lab's invocation of the render, its configuration names the
// CCM token, the fake answered every call it made (none denied, none
// unserved), no log holds a token secret, and pxsubstrate verify finds
// every Node as it should be. TestCapmoxWorkersRun runs it for both capmox
// generations.
func checkCCMInitialised(t *testing.T, l *lab.Lab, a *lab.Applied, sc tenantScope) {
	t.Helper()
	checkInitialised(t, l, sc.NS, 2)

	pods := podsOf(l, sc.NS)
	ccm, ok := pods[sc.Cluster+"-pccm"]
	if !ok || len(ccm.Pids) != 1 {
		t.Fatalf("the lab runs no CCM of %s: %+v", sc.NS, l.Pods())
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", ccm.Pids[0]))
	must(t, err)
	inv := ccm.Containers[0]
	if got := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00"); !slices.Equal(got, append([]string{inv.Path}, inv.Args...)) {
		t.Errorf("the CCM runs %q, not the lab's invocation of the render %q %q", got, inv.Path, inv.Args)
	}
	conf, err := os.ReadFile(filepath.Join(l.PodVolume(sc.NS, sc.Cluster+"-pccm", "cloud-config"), "config.yaml"))
	must(t, err)
	for _, want := range []string{"provider: capmox", "token_id: '" + a.CCMTokenID + "'", "region: '" + lab.Region + "'", "url: '" + l.Proxmox.URL + "'"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("the configuration the init container made of the credentials Secret lacks %q", want)
		}
	}
	checkNoSecretLogged(t, l, a)
	for _, r := range verifyRows(t, l, sc.NS, a.ClusterName) {
		if !r.OK {
			t.Errorf("pxsubstrate verify finds the real CCM's Node %s wanting: %v", r.Node, r.Problems)
		}
	}
}

// verifyRows are pxsubstrate verify's rows of the tenant's cluster (the
// Nodes of its VMs only: the lab's tenants share one API server).
func verifyRows(t *testing.T, l *lab.Lab, ns, cluster string) []verify.Row {
	t.Helper()
	snap, err := verify.Gather(context.Background(), verify.Sources{Management: l.Client, Mapper: l.Client.RESTMapper(), Tenant: l.TenantClient},
		verify.Target{Namespace: ns, Cluster: cluster, CAPIVersion: "v1beta2"})
	must(t, err)
	rows := verify.Judge(snap).Rows
	mine := nodesOfTenant(t, l, ns)
	var out []verify.Row
	for _, r := range rows {
		if r.Node == "" || slices.Contains(mine, r.Node) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		t.Fatalf("verify has no row for %s", ns)
	}
	return out
}

// TestCCMIsolation: two tenants' workers register on one tenant API
// server, so each tenant's CCM meets the other's Nodes. With tenant A's
// CCM scaled to zero, tenant B's CCM (its token audits B's pool only)
// finds none of A's VMs: A's Nodes keep the uninitialized taint, no
// providerID and no topology labels, and B's CCM logs that it cannot find
// them; A's VMs' configuration is untouched. Once A's CCM runs, A's Nodes
// are initialised. Both tenants are the test's own in the shared lab,
// whose other tenants' CCMs meet A's Nodes too and must leave them as B's
// does.
func TestCCMIsolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, b, scB := sharedTenant(t, "", "ccm-b")
	bApplied, err := l.Apply(ctx, b)
	must(t, err)
	eventually(t, 4*time.Minute, "tenant B's workers run", func() (bool, string) {
		running, state := machines(t, l.Client, scB.NS)
		return running == 2, state + "\n" + capiState(l, scB.NS) + "\n" + ccmTail(l, scB.NS)
	})
	_, tn, scA := sharedTenant(t, "", "ccm-a")
	tn.Mutate = scaleToZero(scA.Cluster + "-pccm")
	aApplied, err := l.Apply(ctx, tn)
	must(t, err)
	var aNodes []string
	eventually(t, 3*time.Minute, "tenant A's workers register their Nodes", func() (bool, string) {
		aNodes = nodesOfTenant(t, l, scA.NS)
		return len(aNodes) == 2, fmt.Sprint(aNodes)
	})
	before := vmConfigs(l, scA.NS)
	eventually(t, 2*time.Minute, "tenant B's CCM reports it cannot find A's VMs", func() (bool, string) {
		log := ccmLog(l, scB.NS)
		for _, n := range aNodes {
			if !strings.Contains(log, "failed to find instance by name/uuid "+n) {
				return false, ccmTail(l, scB.NS)
			}
		}
		return true, ""
	})
	// B's CCM has tried every A Node several times by now.
	time.Sleep(15 * time.Second)
	for _, name := range aNodes {
		var n corev1.Node
		must(t, l.TenantClient.Get(ctx, client.ObjectKey{Name: name}, &n))
		if n.Spec.ProviderID != "" || n.Labels[corev1.LabelTopologyZone] != "" || n.Labels[corev1.LabelTopologyRegion] != "" || !tainted(&n) {
			t.Errorf("tenant B's CCM touched tenant A's Node %s: providerID %q, labels %v, taints %v", name, n.Spec.ProviderID, n.Labels, n.Spec.Taints)
		}
	}
	for _, r := range verifyRows(t, l, scA.NS, scA.Cluster) {
		if r.Node != "" && (r.OK || !slices.Contains(r.Codes, verify.CodeNoProviderID) || !slices.Contains(r.Codes, verify.CodeUninitialized)) {
			t.Errorf("verify must name tenant A's Node %s uninitialised, without providerID: ok %t, codes %v", r.Node, r.OK, r.Codes)
		}
	}
	if after := vmConfigs(l, scA.NS); !mapsEqual(before, after) {
		t.Errorf("tenant A's VMs changed:\nbefore %v\nafter %v", before, after)
	}
	scale(t, l, scA.NS, scA.Cluster+"-pccm", 1)
	eventually(t, 4*time.Minute, "tenant A's own CCM initialises its Nodes", func() (bool, string) {
		running, state := machines(t, l.Client, scA.NS)
		return running == 2, state + "\n" + ccmTail(l, scA.NS)
	})
	checkInitialised(t, l, scA.NS, 2)
	checkInitialised(t, l, scB.NS, 2)
	for _, a := range []*lab.Applied{aApplied, bApplied} {
		if d := byTenant(l.PVE.Denied(), a); len(d) > 0 {
			t.Errorf("denied %v", d)
		}
	}
}

// otherTenant is testdata's tenant (kubernetes.yaml and nodes.yaml, or
// cluster and nodes.yaml) moved to namespace ns, its pool too, with
// addresses from the range addrs, read as a user's files are.
func otherTenant(t *testing.T, ns, addrs string, files ...string) lab.Tenant {
	t.Helper()
	if len(files) == 0 {
		files = []string{"kubernetes.yaml", "nodes.yaml"}
	}
	dir := t.TempDir()
	var paths []string
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		must(t, err)
		text := strings.ReplaceAll(string(data), "tenant-demo", ns)
		text = strings.ReplaceAll(text, "10.0.100.20-10.0.100.29", addrs)
		path := filepath.Join(dir, f)
		must(t, os.WriteFile(path, []byte(text), 0o600))
		paths = append(paths, path)
	}
	tn, err := lab.ReadTenant(paths...)
	must(t, err)
	return tn
}

// scaleToZero is a Mutate that renders the Deployment name with no
// replica.
func scaleToZero(name string) func(*unstructured.Unstructured) error {
	return func(o *unstructured.Unstructured) error {
		if o.GetKind() == "Deployment" && o.GetName() == name {
			return unstructured.SetNestedField(o.Object, int64(0), "spec", "replicas")
		}
		return nil
	}
}

func scale(t *testing.T, l *lab.Lab, ns, name string, replicas int) {
	t.Helper()
	d := &unstructured.Unstructured{}
	d.SetAPIVersion("apps/v1")
	d.SetKind("Deployment")
	d.SetNamespace(ns)
	d.SetName(name)
	must(t, l.Client.Patch(context.Background(), d, client.RawPatch("application/merge-patch+json",
		fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas))))
}

// checkInitialised asserts that the tenant's n Nodes are as the CCM
// leaves them: providerID proxmox://<systemUUID>, equal to a Machine's,
// the region and zone labels of the VM, no uninitialized taint.
func checkInitialised(t *testing.T, l *lab.Lab, ns string, n int) {
	t.Helper()
	ctx := context.Background()
	machineIDs := map[string]bool{}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	list.SetKind("MachineList")
	must(t, l.Client.List(ctx, list, client.InNamespace(ns)))
	for _, m := range list.Items {
		id, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
		machineIDs[id] = true
	}
	zones := vmNodesByUUID(l)
	names := nodesOfTenant(t, l, ns)
	if len(names) != n {
		t.Errorf("%s: %d Nodes, want %d", ns, len(names), n)
	}
	for _, name := range names {
		var node corev1.Node
		must(t, l.TenantClient.Get(ctx, client.ObjectKey{Name: name}, &node))
		uuid := node.Status.NodeInfo.SystemUUID
		want := map[string]bool{
			"providerID proxmox://<systemUUID>": node.Spec.ProviderID == nodeagent.ProviderIDPrefix+uuid,
			"a Machine's providerID":            machineIDs[node.Spec.ProviderID],
			"region " + lab.Region:              node.Labels[corev1.LabelTopologyRegion] == lab.Region,
			"zone of its VM's Proxmox node":     zones[uuid] != "" && node.Labels[corev1.LabelTopologyZone] == zones[uuid],
			"no uninitialized taint":            !tainted(&node),
		}
		for what, ok := range want {
			if !ok {
				t.Errorf("Node %s: not %s: providerID %q, labels %v, taints %v, VM node %q", name, what, node.Spec.ProviderID, node.Labels, node.Spec.Taints, zones[uuid])
			}
		}
	}
}

func tainted(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == nodeagent.TaintUninitialized })
}

// nodesOfTenant names the Nodes of the tenant's VMs (by SMBIOS UUID).
func nodesOfTenant(t *testing.T, l *lab.Lab, ns string) []string {
	t.Helper()
	uuids := map[string]bool{}
	for _, g := range labVMs(l) {
		if g.pool == ns {
			uuids[g.uuid] = true
		}
	}
	var nodes corev1.NodeList
	must(t, l.TenantClient.List(context.Background(), &nodes))
	var out []string
	for _, n := range nodes.Items {
		if uuids[n.Status.NodeInfo.SystemUUID] {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out
}

// vmNodesByUUID maps each VM's SMBIOS UUID to its Proxmox node.
func vmNodesByUUID(l *lab.Lab) map[string]string {
	out := map[string]string{}
	for _, g := range labVMs(l) {
		out[g.uuid] = g.node
	}
	return out
}

// vmConfigs are the configurations of the tenant's VMs, by VMID.
func vmConfigs(l *lab.Lab, pool string) map[int]string {
	out := map[int]string{}
	for _, g := range labVMs(l) {
		if g.pool == pool {
			conf, _, _ := l.PVE.VMConfig(g.vmid)
			out[g.vmid] = fmt.Sprint(conf)
		}
	}
	return out
}

func mapsEqual(a, b map[int]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func podsOf(l *lab.Lab, ns string) map[string]lab.Pod {
	out := map[string]lab.Pod{}
	for _, p := range l.Pods() {
		if p.Namespace == ns {
			out[p.Deployment] = p
		}
	}
	return out
}

// ccmLog is the log of the CCM of the tenant in namespace ns (of its
// one cluster's <cluster>-pccm Deployment).
func ccmLog(l *lab.Lab, ns string) string {
	paths, _ := filepath.Glob(filepath.Join(l.Dir, "pods", ns+".*-pccm", lab.CCMContainer+".log"))
	var out []string
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		out = append(out, string(data))
	}
	return strings.Join(out, "")
}

func ccmTail(l *lab.Lab, ns string) string { return "CCM of " + ns + ":\n" + tail(ccmLog(l, ns), 15) }

// checkNoSecretLogged reads every log of the lab's Pods and of the lab's
// programs for the secrets of the tenant's tokens.
func checkNoSecretLogged(t *testing.T, l *lab.Lab, a *lab.Applied) {
	t.Helper()
	var logs []string
	_ = filepath.WalkDir(l.Dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".log") {
			logs = append(logs, path)
		}
		return nil
	})
	if len(logs) == 0 {
		t.Fatal("no log to read")
	}
	for _, id := range []string{a.TokenID, a.CCMTokenID, a.CSITokenID} {
		secret, ok := l.PVE.TokenSecret(id)
		if !ok {
			t.Errorf("no token %s on the fake", id)
			continue
		}
		for _, path := range logs {
			data, err := os.ReadFile(path)
			must(t, err)
			if strings.Contains(string(data), secret) {
				t.Errorf("%s holds the secret of token %s", path, id)
			}
		}
	}
}

// labVM is a worker VM on the fake with its SMBIOS UUID and pool.
type labVM struct {
	vmid             int
	node, uuid, pool string
}

func labVMs(l *lab.Lab) []labVM {
	poolOf := map[int]string{}
	var pools []map[string]any
	_ = l.PVE.Client().Get(context.Background(), "/pools", &pools)
	for _, p := range pools {
		id, _ := p["poolid"].(string)
		pool, err := l.PVE.Client().Pool(context.Background(), id)
		if err != nil {
			continue
		}
		for _, m := range pool.Members {
			poolOf[int(m.VMID)] = id
		}
	}
	var out []labVM
	for _, g := range guests(l) {
		uuid := ""
		for _, f := range strings.Split(g.conf["smbios1"], ",") {
			if v, ok := strings.CutPrefix(f, "uuid="); ok {
				uuid = v
			}
		}
		out = append(out, labVM{vmid: g.vmid, node: g.node, uuid: uuid, pool: poolOf[g.vmid]})
	}
	return out
}

// capiState sums up the tenant's Cluster API objects for a failure.
func capiState(l *lab.Lab, ns string) string {
	var out []string
	for _, kind := range []string{"Cluster", "MachineDeployment", "MachineSet"} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("cluster.x-k8s.io/v1beta2")
		list.SetKind(kind + "List")
		if err := l.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			out = append(out, kind+": "+err.Error())
			continue
		}
		for _, o := range list.Items {
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			var msgs []string
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["status"] != "True" {
					msgs = append(msgs, fmt.Sprintf("%v/%v: %v", m["type"], m["reason"], m["message"]))
				}
			}
			out = append(out, fmt.Sprintf("%s %s: %s", kind, o.GetName(), strings.Join(msgs, "; ")))
		}
	}
	return strings.Join(out, "\n")
}
