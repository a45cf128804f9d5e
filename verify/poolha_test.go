package verify

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
)

// haWorker is a Machine of pool pool (with proxmox.ha when ha) whose
// ProxmoxMachine capmox placed on node, as objects of a management
// cluster.
func haWorker(name, pool, node string, ha bool) []client.Object {
	m := object(machineGVK, name, nil)
	labels := map[string]string{capmox.LabelClusterName: "kubernetes-a", capmox.LabelDeploymentName: pool}
	if ha {
		labels[capmox.LabelHA] = "true"
	}
	m.SetLabels(labels)
	_ = unstructured.SetNestedField(m.Object, "pm-"+name, "spec", "infrastructureRef", "name")
	pm := object(pmGVK, "pm-"+name, nil)
	_ = unstructured.SetNestedField(pm.Object, node, "status", "proxmoxNode")
	return []client.Object{m, pm}
}

// haSnapshot is a snapshot holding workers: name -> labels and the
// Proxmox node of its VM.
func haSnapshot(workers ...struct {
	name   string
	labels map[string]string
	node   string
}) *Snapshot {
	s := snapshotOf()
	for _, w := range workers {
		m := machineOf(w.name)
		for k, v := range w.labels {
			m.Labels[k] = v
		}
		s.Management.Machines = append(s.Management.Machines, m)
		s.Management.ProxmoxMachines = append(s.Management.ProxmoxMachines, ProxmoxMachine{Name: m.InfrastructureRef, ProxmoxNode: w.node})
	}
	return s
}

type haW = struct {
	name   string
	labels map[string]string
	node   string
}

// TestPoolHALabelsAreTheRenderers: the Machines of a pool rendered with
// proxmox.ha carry what verify's pool HA check selects by: two of them on
// one Proxmox node are named.
func TestPoolHALabelsAreTheRenderers(t *testing.T) {
	// The renderer's own scenario of a pool with proxmox.ha.
	input, err := os.ReadFile(filepath.Join("..", "capmoxrender", "testdata", "scenarios", "nodes-ha", "input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := capmoxrender.ParseKubernetesNodes(input)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := capmoxrender.RenderNodes(context.Background(), n, capmoxrender.Options{Capmox: capmoxrender.CapmoxV08})
	if err != nil {
		t.Fatal(err)
	}
	var labels map[string]string
	for _, o := range objs {
		if o.GetKind() == "MachineDeployment" {
			l, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
			labels = l
		}
	}
	s := haSnapshot(haW{"w-1", labels, "pve1"}, haW{"w-2", labels, "pve1"})
	s.Target.Cluster = labels[capmox.LabelClusterName]
	for i := range s.Management.Machines {
		s.Management.Machines[i].Labels = labels
	}
	got := Judge(s).Findings
	if len(got) != 1 || got[0].Code != CodeHAWorkersShareNode || !strings.Contains(got[0].Problem, "its workers w-1, w-2 share Proxmox node pve1") {
		t.Errorf("the rendered pool's labels %v: findings %+v, want its two workers on pve1 named", labels, got)
	}
}

// TestCheckPoolHA: workers of an HA pool on one node are a warning naming
// them and the node; apart, without HA, being deleted or not placed yet,
// they are none.
func TestCheckPoolHA(t *testing.T) {
	pool := func(name string, ha bool) map[string]string {
		l := map[string]string{capmox.LabelDeploymentName: name}
		if ha {
			l[capmox.LabelHA] = "true"
		}
		return l
	}
	s := haSnapshot(
		haW{"ha-1", pool("md-ha", true), "pve1"}, haW{"ha-2", pool("md-ha", true), "pve1"}, haW{"ha-3", pool("md-ha", true), "pve2"},
		haW{"apart-1", pool("md-apart", true), "pve1"}, haW{"apart-2", pool("md-apart", true), "pve2"},
		haW{"plain-1", pool("md-plain", false), "pve3"}, haW{"plain-2", pool("md-plain", false), "pve3"},
		haW{"going-1", pool("md-going", true), "pve3"}, haW{"going-2", pool("md-going", true), "pve3"},
		haW{"new-1", pool("md-new", true), ""}, haW{"new-2", pool("md-new", true), ""},
	)
	for i, m := range s.Management.Machines {
		s.Management.Machines[i].Deleting = strings.HasPrefix(m.Name, "going-2")
	}
	got := Judge(s).Findings
	if len(got) != 1 || got[0].Code != CodeHAWorkersShareNode || !got[0].Warning ||
		!strings.Contains(got[0].Problem, "pool tenant-a/md-ha has proxmox.ha, and its workers ha-1, ha-2 share Proxmox node pve1: losing it takes 2 of them") {
		t.Errorf("findings %+v", got)
	}
}

// TestCheckHAResources: an HA resource whose Machine is gone is an error;
// one whose Machine is there, or of another namespace, is none; a token
// that may not read them is a warning; without Proxmox VE nothing is
// judged.
func TestCheckHAResources(t *testing.T) {
	s := haSnapshot(haW{"ha-1", nil, "pve1"})
	if got := checkHAResources(s); got != nil {
		t.Errorf("without Proxmox VE: %+v", got)
	}
	s.Proxmox = &Proxmox{TokenID: "ha@pve!tk", HAResources: []HAResource{
		{SID: "vm:101", Machine: "tenant-a/ha-1"}, {SID: "vm:102", Machine: "tenant-a/ha-gone"}, {SID: "vm:103", Machine: "tenant-b/other"},
	}}
	got := Judge(s).Findings
	if len(got) != 1 || got[0].Code != CodeHAResourceWithoutMachine || got[0].Warning ||
		!strings.Contains(got[0].Problem, "HA resource vm:102 was made for Machine tenant-a/ha-gone, which is gone") {
		t.Errorf("findings %+v", got)
	}
	s.Proxmox = &Proxmox{TokenID: "capmox@pve!tk", HAHidden: true}
	got = Judge(s).Findings
	if len(got) != 1 || got[0].Code != CodeHAResourcesNotVisible || !got[0].Warning ||
		!strings.Contains(got[0].Problem, "token capmox@pve!tk may not read the HA resources") {
		t.Errorf("hidden: findings %+v", got)
	}
}
