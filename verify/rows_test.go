package verify

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// worker is a Machine of kubernetes-a paired by providerID and nodeRef,
// and what its ProxmoxMachine says of its VM (none when all are zero).
type testWorker struct {
	name, pid, nodeRef string
	vmid               int64
	pveNode            string
	bootGiB            int32
}

// rowsOf judges the rows of nodes and workers, with the cluster's CCM
// region and CSI node plugin as e says.
func rowsOf(nodes []Node, workers []testWorker, e expect) []Row {
	s := snapshotOf()
	s.Tenant.Nodes = nodes
	for _, w := range workers {
		m := machineOf(w.name)
		m.ProviderID, m.NodeRef = w.pid, w.nodeRef
		s.Management.Machines = append(s.Management.Machines, m)
		if w.vmid != 0 || w.pveNode != "" || w.bootGiB != 0 {
			s.Management.ProxmoxMachines = append(s.Management.ProxmoxMachines, ProxmoxMachine{Name: m.InfrastructureRef, VMID: w.vmid, ProxmoxNode: w.pveNode, BootVolumeGiB: w.bootGiB})
		}
	}
	s.Management.Region, s.Management.RegionSource = e.Region, e.RegionSource
	if e.CSINodes != nil {
		s.Management.CSIController = &Deployment{Replicas: 1, Available: 1}
		s.Tenant.CSINodes, s.Tenant.CSIDaemonSets = e.CSINodes, e.CSIDaemonSets
	}
	return Judge(s).Rows
}

func TestJudge(t *testing.T) {
	cases := map[string]struct {
		reason   string
		nodes    []Node
		machines []testWorker
		want     []string // node/machine:problem count
		failed   bool
	}{
		"Healthy": {reason: "matching providerID, labels, no taint",
			nodes: []Node{{Name: "w1", ProviderID: uuidA, Labels: topo}}, machines: []testWorker{{name: "m1", pid: uuidA, nodeRef: "w1"}},
			want: []string{"w1/m1:ok"}},
		"SameZone": {reason: "the zone names the Proxmox node the VM runs on",
			nodes: []Node{{Name: "w1", ProviderID: uuidA, Labels: topo}}, machines: []testWorker{{name: "m1", pid: uuidA, nodeRef: "w1", vmid: 101, pveNode: "pve1"}},
			want: []string{"w1/m1:ok"}},
		"Migrated": {reason: "a VM moved to another Proxmox node after its Node was initialised", failed: true,
			nodes: []Node{{Name: "w1", ProviderID: uuidA, Labels: topo}}, machines: []testWorker{{name: "m1", pid: uuidA, nodeRef: "w1", vmid: 101, pveNode: "pve2"}},
			want: []string{"w1/m1:zone label pve1, but the VM runs on Proxmox node pve2"}},
		"DefaultForm": {reason: "the CCM default providerID never matches capmox", failed: true,
			nodes:    []Node{{Name: "w1", ProviderID: "proxmox://pve-eu1/119", Labels: topo}},
			machines: []testWorker{{name: "m1", pid: uuidA, nodeRef: "w1"}},
			want:     []string{"w1/m1:providerID is in the CCM default form proxmox://<region>/<vmid>|Machine m1 has providerID " + uuidA}},
		"Uninitialized": {reason: "no providerID, no labels, taint", failed: true,
			nodes:    []Node{{Name: "w1", Uninitialized: true}},
			machines: []testWorker{{name: "m1", pid: uuidA}},
			want:     []string{"w1/:no providerID|no topology.kubernetes.io/region label|no topology.kubernetes.io/zone label|still tainted node.cloudprovider.kubernetes.io/uninitialized", "-/m1:no tenant Node has this providerID"}},
		"CaseOnly": {reason: "CAPI compares exactly", failed: true,
			nodes:    []Node{{Name: "w1", ProviderID: "proxmox://6C9A3B2E-1F4D-4D6E-9A1B-2C3D4E5F6A7B", Labels: topo}},
			machines: []testWorker{{name: "m1", pid: uuidA}},
			want:     []string{"w1/m1:providerID differs from Machine m1's only in letter case"}},
		"Provisioning": {reason: "a Machine without providerID is reported", failed: true,
			nodes:    []Node{{Name: "w1", ProviderID: uuidA, Labels: topo}},
			machines: []testWorker{{name: "m1", pid: uuidA}, {name: "m2"}},
			want:     []string{"w1/m1:ok", "-/m2:Machine has no providerID yet"}},
		"DiskGrown": {reason: "a 50 GiB system disk leaves about 48 GiB to the kubelet",
			nodes:    []Node{{Name: "w1", ProviderID: uuidA, Labels: topo, EphemeralStorage: 48 << 30}},
			machines: []testWorker{{name: "m1", pid: uuidA, nodeRef: "w1", bootGiB: 50}},
			want:     []string{"w1/m1:ok"}},
		"DiskNotGrown": {reason: "the clone kept the template's 20 GiB disk", failed: true,
			nodes:    []Node{{Name: "w1", ProviderID: uuidA, Labels: topo, EphemeralStorage: 37 << 29}},
			machines: []testWorker{{name: "m1", pid: uuidA, nodeRef: "w1", bootGiB: 50}},
			want:     []string{"w1/m1:its filesystem holds 18.5 GiB, but the pool asked for a 50 GiB system disk (disks.bootVolume)"}},
		"DiskNotAsked": {reason: "without a bootVolume the template's disk is what was asked",
			nodes:    []Node{{Name: "w1", ProviderID: uuidA, Labels: topo, EphemeralStorage: 18 << 30}},
			machines: []testWorker{{name: "m1", pid: uuidA, nodeRef: "w1"}},
			want:     []string{"w1/m1:ok"}},
		"Foreign": {reason: "a Node of no Machine", failed: true,
			nodes: []Node{{Name: "w9", ProviderID: uuidB, Labels: topo}},
			want:  []string{"w9/:no Machine has this providerID"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rows := rowsOf(tc.nodes, tc.machines, expect{})
			if diff := cmp.Diff(tc.want, summarize(rows)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
			if Failed(rows) != tc.failed {
				t.Errorf("%s: Failed = %t, want %t", tc.reason, !tc.failed, tc.failed)
			}
			for _, r := range rows {
				if len(r.Problems) != len(r.Fixes) {
					t.Errorf("every problem needs a fix: %+v", r)
				}
			}
		})
	}
}

func summarize(rows []Row) []string {
	var out []string
	for _, r := range rows {
		s := r.Node + "/" + r.Machine + ":"
		if r.OK {
			s += "ok"
		}
		for i, p := range r.Problems {
			if i > 0 {
				s += "|"
			}
			s += p
		}
		out = append(out, s)
	}
	return out
}

// codes lists each row as node:code|code.
func codes(rows []Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Node+":"+strings.Join(r.Codes, "|"))
	}
	return out
}

func TestJudgeWithExpect(t *testing.T) {
	healthy := func(name, pid string) Node {
		return Node{Name: name, ProviderID: pid, Labels: topo}
	}
	machines := []testWorker{{name: "m1", pid: uuidA, nodeRef: "w1"}, {name: "m2", pid: uuidB, nodeRef: "w2"}}
	ready := []CSINodePod{{Name: "csi-node-a", Ready: true}}
	cases := map[string]struct {
		reason string
		nodes  []Node
		expect expect
		want   []string
	}{
		"NothingExpected": {reason: "without a CCM region or CSI driver nothing more is checked",
			nodes: []Node{healthy("w1", uuidA), healthy("w2", uuidB)},
			want:  []string{"w1:", "w2:"}},
		"RegionAndCSIMet": {reason: "the CCM's region and a ready CSI node Pod on each Node",
			nodes:  []Node{healthy("w1", uuidA), healthy("w2", uuidB)},
			expect: expect{Region: "pve-eu1", CSINodes: map[string][]CSINodePod{"w1": ready, "w2": {{Name: "old"}, {Name: "new", Ready: true}}}, CSIDaemonSets: []string{"ds"}},
			want:   []string{"w1:", "w2:"}},
		"RegionMismatch": {reason: "a region label the CCM's credentials do not name",
			nodes:  []Node{healthy("w1", uuidA), {Name: "w2", ProviderID: uuidB, Labels: map[string]string{LabelRegion: "pve-old", LabelZone: "pve1"}}},
			expect: expect{Region: "pve-eu1", RegionSource: "Secret tenant-a/ccm"},
			want:   []string{"w1:", "w2:" + CodeRegionMismatch}},
		"NoTopology": {reason: "missing labels are the pitfall that stops the CSI node plugin",
			nodes:  []Node{healthy("w1", uuidA), {Name: "w2", ProviderID: uuidB}},
			expect: expect{Region: "pve-eu1"},
			want:   []string{"w1:", "w2:" + CodeNoTopologyLabels + "|" + CodeNoTopologyLabels}},
		"CSIPodNotReady": {reason: "a Node whose CSI node Pod is not ready",
			nodes:  []Node{healthy("w1", uuidA), healthy("w2", uuidB)},
			expect: expect{CSINodes: map[string][]CSINodePod{"w1": ready, "w2": {{Name: "csi-node-b", Reason: "CrashLoopBackOff"}}}, CSIDaemonSets: []string{"ds"}},
			want:   []string{"w1:", "w2:" + CodeCSINodeNotReady}},
		"CSIPodMissing": {reason: "a Node the DaemonSet has no Pod on",
			nodes:  []Node{healthy("w1", uuidA), healthy("w2", uuidB)},
			expect: expect{CSINodes: map[string][]CSINodePod{"w1": ready}, CSIDaemonSets: []string{"ds"}},
			want:   []string{"w1:", "w2:" + CodeCSINodeNotReady}},
		"CSINoDaemonSet": {reason: "a CSI controller without a node plugin in the tenant fails every Node",
			nodes:  []Node{healthy("w1", uuidA), healthy("w2", uuidB)},
			expect: expect{CSINodes: map[string][]CSINodePod{}},
			want:   []string{"w1:" + CodeCSINodeNotReady, "w2:" + CodeCSINodeNotReady}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rows := rowsOf(tc.nodes, machines, tc.expect)
			if diff := cmp.Diff(tc.want, codes(rows)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
			for _, r := range rows {
				if len(r.Codes) != len(r.Problems) || len(r.Fixes) != len(r.Problems) {
					t.Errorf("every problem needs a code and a fix: %+v", r)
				}
				if r.OK != (len(r.Problems) == 0) {
					t.Errorf("row %s: OK %t with problems %v", r.Node, r.OK, r.Problems)
				}
			}
		})
	}
}
