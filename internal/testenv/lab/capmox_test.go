package lab_test

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/capi"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/lab"
)

func init() { ctrllog.SetLogger(logr.Discard()) }

// readTenant reads testdata's Kubernetes and KubernetesNodes.
func readTenant(t *testing.T) lab.Tenant {
	t.Helper()
	tn, err := lab.ReadTenant(filepath.Join("testdata", "kubernetes.yaml"), filepath.Join("testdata", "nodes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

// TestCapmoxWorkersRun: the tenant's cluster and pool, rendered by us and
// applied with CAPI, IPAM, capmox and CABPT running, come up as Machines
// in phase Running with a nodeRef: capmox clones, sizes and starts each
// VM on the Proxmox fake with the tenant's own token, the VM boots the
// Talos configuration CABPT rendered and registers its Node, which the
// real Proxmox CCM initialises (checkCCMInitialised). Both capmox
// generations: v0.9.0 (API v1alpha2) and v0.7.2 (API v1alpha1), each with
// a tenant of its own in the generation's shared lab (sharedTenant).
func TestCapmoxWorkersRun(t *testing.T) { eachCapmox(t, workersRun) }

// eachCapmox runs f as a subtest per capmox generation, v0.9.0 and
// v0.7.2, in parallel with each other and with the package's other tests:
// each lab is a world of its own, capmox in its own network namespace,
// and the tests that share a lab (sharedTenant) each hold to a tenant of
// their own.
func eachCapmox(t *testing.T, f func(*testing.T, capi.Capmox)) {
	t.Parallel()
	for _, gen := range []capi.Capmox{capi.CapmoxV09, capi.CapmoxV07} {
		t.Run(string(gen), func(t *testing.T) {
			t.Parallel()
			f(t, gen)
		})
	}
}

// workersRun applies a tenant of its own in the shared lab of gen.
func workersRun(t *testing.T, gen capi.Capmox) {
	ctx := context.Background()
	l, tn, sc := sharedTenant(t, gen, "workers")
	a, err := l.Apply(ctx, tn)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		running, state := machines(t, l.Client, sc.NS)
		if running == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Logf("--- cabpt:\n%s", l.Managers.CABPT.Tail(25))
			pc := &unstructured.Unstructured{}
			pc.SetAPIVersion(l.InfrastructureAPIVersion())
			pc.SetKind("ProxmoxCluster")
			_ = l.Client.Get(ctx, client.ObjectKey{Namespace: sc.NS, Name: a.ClusterName}, pc)
			t.Fatalf("the Machines of %s did not run: %s\nProxmoxCluster status %v\nboots %+v\nunserved %v\ndenied %v", a.ClusterName, state, pc.Object["status"],
				bootsOf(l, sc.NS), byTenant(l.PVE.Unserved(), a), byTenant(l.PVE.Denied(), a))
		}
		time.Sleep(2 * time.Second)
	}
	checkWorkers(t, l, a, sc)
	checkCCMInitialised(t, l, a, sc)
}

// checkWorkers asserts every worker VM of the tenant sc on the Proxmox
// fake against the pool testdata/nodes.yaml asks for, its Node on the
// tenant API server against its VM, and the tenant's tokens' requests:
// each of its VMs cloned by the tenant's own capmox token, which cloned
// no VM outside the tenant's pool; none of its requests denied, none
// unserved, no failed boot of a VM it started. In a lab of its own the
// tenant is demoScope.
func checkWorkers(t *testing.T, l *lab.Lab, a *lab.Applied, sc tenantScope) {
	t.Helper()
	ctx := context.Background()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(l.InfrastructureAPIVersion())
	list.SetKind("ProxmoxMachineList")
	if err := l.Client.List(ctx, list, client.InNamespace(sc.NS)); err != nil {
		t.Fatal(err)
	}
	pool, err := l.PVE.Client().Pool(ctx, sc.NS)
	if err != nil {
		t.Fatal(err)
	}
	members := map[uint64]bool{}
	for _, m := range pool.Members {
		members[m.VMID] = true
	}
	mine := nodesOfTenant(t, l, sc.NS)
	var nodes corev1.NodeList
	if err := l.TenantClient.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	addrOf := map[string]string{}
	for _, n := range nodes.Items {
		for _, ad := range n.Status.Addresses {
			if ad.Type == corev1.NodeInternalIP {
				addrOf[n.Spec.ProviderID] = ad.Address
			}
		}
	}
	made := clones(l)
	for _, pm := range list.Items {
		vmid, _, _ := unstructured.NestedInt64(pm.Object, "spec", "virtualMachineID")
		providerID, _, _ := unstructured.NestedString(pm.Object, "spec", "providerID")
		conf, _, ok := l.PVE.VMConfig(int(vmid))
		if !ok {
			t.Errorf("%s: VM %d is not on the fake", pm.GetName(), vmid)
			continue
		}
		addr := addrOf[providerID]
		want := map[string]bool{
			"cores 2":                      conf["cores"] == "2",
			"sockets 1":                    conf["sockets"] == "1",
			"memory 4096":                  conf["memory"] == "4096",
			"disk 30G":                     strings.Contains(conf["scsi0"], "size=30G"),
			"net0 on vmbr1":                strings.Contains(conf["net0"], "bridge=vmbr1"),
			"net0 tag 100":                 strings.Contains(conf["net0"], "tag=100"),
			"template tags":                strings.Contains(conf["tags"], "cozystack") && strings.Contains(conf["tags"], "talos-v1.13.6"),
			"address tag":                  addr != "" && strings.Contains(conf["tags"], "ip_net0_"+addr),
			"in the pool":                  members[uint64(vmid)],
			"smbios uuid":                  strings.Contains(conf["smbios1"], "uuid="+strings.TrimPrefix(providerID, "proxmox://")),
			"address in range":             addressIn(addr, sc.First, sc.Last),
			"cloned by the tenant's token": made[int(vmid)].task.User == a.TokenID,
		}
		for what, holds := range want {
			if !holds {
				t.Errorf("%s (VM %d, node address %q): not %s: %v", pm.GetName(), vmid, addr, what, conf)
			}
		}
	}
	if len(list.Items) != 2 || len(mine) != 2 {
		t.Errorf("%d ProxmoxMachines and %d Nodes of %s, want 2 each", len(list.Items), len(mine), sc.NS)
	}
	for vmid, c := range made {
		if c.task.User == a.TokenID && !members[uint64(vmid)] {
			t.Errorf("the tenant's token %s cloned VM %d, which is not in its pool %s", a.TokenID, vmid, sc.NS)
		}
	}
	checkTenantRequests(t, l, a)
}

// addressIn says whether addr lies in first-last.
func addressIn(addr, first, last string) bool {
	a, err := netip.ParseAddr(addr)
	return err == nil && a.Compare(netip.MustParseAddr(first)) >= 0 && a.Compare(netip.MustParseAddr(last)) <= 0
}

// machines counts the Running Machines with a nodeRef and describes all.
func machines(t *testing.T, c client.Client, ns string) (int, string) {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	list.SetKind("MachineList")
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	running := 0
	var out []string
	for _, m := range list.Items {
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		node, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		if phase == "Running" && node != "" {
			running++
		}
		conds, _, _ := unstructured.NestedSlice(m.Object, "status", "conditions")
		out = append(out, fmt.Sprintf("%s phase=%s node=%s conditions=%v", m.GetName(), phase, node, conds))
	}
	return running, strings.Join(out, "\n")
}

// TestCapmoxPrivileges: the same tenant with VM.PowerMgmt removed from its
// capmox role (CozyCapmox) gets as far as PVE lets it: the VMs are cloned,
// sized and given their ISO, and starting one is refused with PVE's 403,
// which capmox logs as go-proxmox's "not authorized to access endpoint".
// capmox v0.9.0 does not try a failed start again: its state machine moves
// past PoweringOnFailed and marks the ProxmoxMachine provisioned with the
// VM stopped, so no Node registers and the Machine waits for the
// MachineHealthCheck's node startup timeout. With the privilege put back
// and the Machines deleted (what that remediation does), the workers come
// up. The control, the role as the plan made it, is TestCapmoxWorkersRun,
// which holds that no request at all is denied.
func TestCapmoxPrivileges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A lab of its own: the role CozyCapmox it takes VM.PowerMgmt from is
	// the platform's, held by every tenant's capmox token in a lab.
	l := startLab(t, "")
	tn := readTenant(t)
	a, err := l.ApplyACLs(ctx, &tn)
	if err != nil {
		t.Fatal(err)
	}
	root := l.PVE.Client()
	var privs map[string]any
	must(t, root.Get(ctx, "/access/roles/CozyCapmox", &privs))
	var kept []string
	for p := range privs {
		if p != "VM.PowerMgmt" {
			kept = append(kept, p)
		}
	}
	setPrivs := func(list []string) {
		must(t, root.Put(ctx, "/access/roles/CozyCapmox", map[string]any{"privs": strings.Join(list, ",")}, nil))
	}
	setPrivs(kept)
	must(t, l.ApplyObjects(ctx, tn, a))
	eventually(t, 3*time.Minute, "each start refused with PVE's 403, which capmox reports", func() (bool, string) {
		denied := l.PVE.Denied()
		starts := 0
		for _, d := range denied {
			if strings.HasSuffix(d.Path, "/status/start") {
				starts++
			}
		}
		log := l.Managers.Capmox.ReadOutput()
		return starts >= 2 && len(denied) == starts &&
				strings.Contains(log, "not authorized to access endpoint") && strings.Contains(log, "unable to start the virtual machine"),
			fmt.Sprintf("denied %v\n%s", denied, l.Managers.Capmox.Tail(20))
	})
	eventually(t, time.Minute, "capmox marks the ProxmoxMachines provisioned with their VMs stopped", func() (bool, string) {
		msgs := machineMessages(t, l)
		return strings.Count(msgs, "VirtualMachineProvisioned/Provisioned") == 2, msgs
	})
	var vms []map[string]any
	must(t, root.Get(ctx, "/cluster/resources?type=vm", &vms))
	for _, vm := range vms {
		if vm["template"] != float64(1) && vm["status"] != "stopped" {
			t.Errorf("VM %v is %v without VM.PowerMgmt", vm["vmid"], vm["status"])
		}
	}
	if running, state := machines(t, l.Client, "tenant-demo"); running > 0 || len(l.Boots()) > 0 {
		t.Errorf("a worker ran without VM.PowerMgmt: %s, boots %v", state, l.Boots())
	}
	setPrivs(append(kept, "VM.PowerMgmt"))
	must(t, l.Client.DeleteAllOf(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine"}}, client.InNamespace("tenant-demo")))
	eventually(t, 4*time.Minute, "new workers run once the privilege is back", func() (bool, string) {
		running, state := machines(t, l.Client, "tenant-demo")
		return running == 2, state
	})
	var secrets corev1.SecretList
	must(t, l.Client.List(ctx, &secrets, client.InNamespace("tenant-demo")))
	log := l.Managers.Capmox.ReadOutput()
	for _, s := range secrets.Items {
		if v := s.Data["secret"]; len(v) > 0 && strings.Contains(log, string(v)) {
			t.Errorf("capmox logged the token secret of %s", s.Name)
		}
	}
}

// machineMessages joins the conditions of the lab's ProxmoxMachines, one
// line each: name, type/reason and message.
func machineMessages(t *testing.T, l *lab.Lab) string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(l.InfrastructureAPIVersion())
	list.SetKind("ProxmoxMachineList")
	if err := l.Client.List(context.Background(), list, client.InNamespace("tenant-demo")); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, pm := range list.Items {
		conds, _, _ := unstructured.NestedSlice(pm.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok {
				out = append(out, fmt.Sprintf("%s %s/%v: %v", pm.GetName(), m["type"], m["reason"], m["message"]))
			}
		}
	}
	return strings.Join(out, "\n")
}

// startLab starts a lab with capmox gen (empty: v0.9.0), logging to the
// test, and stops it when the test ends.
func startLab(t *testing.T, gen capi.Capmox) *lab.Lab {
	t.Helper()
	return startLabWith(t, lab.Options{Capmox: gen})
}

// startLabWith starts a lab with o, logging to the test, and stops it when
// the test ends.
func startLabWith(t *testing.T, o lab.Options) *lab.Lab {
	t.Helper()
	o.Log = func(s string) { t.Log(s) }
	l := testenv.StartFor(t, func() (*lab.Lab, error) { return lab.Start(context.Background(), o) })
	// Cleanups run last first: this one before the lab stops.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("capmox's log, the last lines about VM ids, clones and errors:\n%s", capmoxClues(l.Managers.Capmox.ReadOutput(), 60))
		}
	})
	return l
}

func eventually(t *testing.T, d time.Duration, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		done, state := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s:\n%s", what, d, state)
		}
		time.Sleep(2 * time.Second)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// capmoxClues is the last n lines of capmox's log that speak of a VM id, a
// clone, a task or an error: what a failed lab test needs to tell a
// provisioning fault from a slow one.
func capmoxClues(log string, n int) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		low := strings.ToLower(line)
		if strings.Contains(low, "vmid") || strings.Contains(low, "clone") || strings.Contains(low, "task") || strings.Contains(low, "error") {
			out = append(out, line)
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}
