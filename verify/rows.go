package verify

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Label and taint names the CCM manages.
const (
	LabelRegion        = "topology.kubernetes.io/region"
	LabelZone          = "topology.kubernetes.io/zone"
	TaintUninitialized = "node.cloudprovider.kubernetes.io/uninitialized"
)

// capmoxProviderID is the form capmox writes: proxmox://<SMBIOS UUID>.
var capmoxProviderID = regexp.MustCompile(`^proxmox://[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// defaultProviderID is the CCM's own form: proxmox://<region>/<vmid>.
var defaultProviderID = regexp.MustCompile(`^proxmox://[^/]*/[0-9]+$`)

// worker is a Machine of the cluster with what its ProxmoxMachine says of
// its VM: the VM id and Proxmox node capmox reports, and the system disk
// its pool asked for (disks.bootVolume; 0 when none was asked).
type worker struct {
	Machine
	VMID          int64
	ProxmoxNode   string
	BootVolumeGiB int32
}

// Finding codes of the Node rows: each problem of a row has one.
const (
	CodeNoProviderID          = "NoProviderID"
	CodeProviderIDDefaultForm = "ProviderIDDefaultForm"
	CodeProviderIDForm        = "ProviderIDForm"
	CodeProviderIDCase        = "ProviderIDCase"
	CodeProviderIDMismatch    = "ProviderIDMismatch"
	CodeNodeWithoutMachine    = "NodeWithoutMachine"
	CodeNoTopologyLabels      = "NoTopologyLabels"
	CodeRegionMismatch        = "RegionMismatch"
	CodeZoneMismatch          = "ZoneMismatch"
	CodeUninitialized         = "Uninitialized"
	CodeCSINodeNotReady       = "CSINodeNotReady"
	CodeMachineNoProviderID   = "MachineNoProviderID"
	CodeMachineWithoutNode    = "MachineWithoutNode"
	CodeDiskSmallerThanAsked  = "DiskSmallerThanAsked"
)

// expect is what the cluster's own configuration says its Nodes must
// show; a zero field is left unchecked.
type expect struct {
	// Namespace and Cluster name the cluster in the fix commands, and
	// TenantKubeconfig the tenant's kubeconfig file in them.
	Namespace, Cluster, TenantKubeconfig string
	// Region is the region of the CCM's credentials (the cloud-config's
	// clusters[].region), which the CCM writes to
	// topology.kubernetes.io/region of every Node it initialises;
	// RegionSource names where it was read, for the messages.
	Region, RegionSource string
	// CSINodes maps a Node name to the CSI node plugin Pods on it; nil
	// when the cluster runs no CSI driver, so nothing is checked.
	CSINodes map[string][]CSINodePod
	// CSIDaemonSets are the tenant's CSI node plugin DaemonSets
	// (namespace/name), for the fixes; empty when there is none.
	CSIDaemonSets []string
}

// Row is the verdict on one Node (or on a Machine no Node matches).
type Row struct {
	Node       string `json:"node"`
	Machine    string `json:"machine"`
	ProviderID string `json:"providerID"`
	Region     string `json:"region"`
	Zone       string `json:"zone"`
	VM         string `json:"vm,omitempty"`
	Address    string `json:"address,omitempty"`
	State      string `json:"state,omitempty"`
	OK         bool   `json:"ok"`
	// Codes, Problems and Fixes go together: the i-th problem has the
	// i-th code and fix.
	Codes    []string `json:"codes,omitempty"`
	Problems []string `json:"problems,omitempty"`
	Fixes    []string `json:"fixes,omitempty"`
}

func (r *Row) fail(code, problem, fix string) {
	r.Codes = append(r.Codes, code)
	r.Problems = append(r.Problems, problem)
	r.Fixes = append(r.Fixes, fix)
}

// Failed reports whether any row has a problem.
func Failed(rows []Row) bool {
	for _, r := range rows {
		if !r.OK {
			return true
		}
	}
	return false
}

// judgeRows returns one row per Node, sorted by name, then one row per
// Machine of the cluster that no Node matched. Every Node is held to the
// CCM's region when the CCM's credentials name one, and to a ready CSI
// node plugin Pod when the cluster runs the CSI controller.
func judgeRows(s *Snapshot) []Row {
	e := expect{Namespace: s.Target.Namespace, Cluster: s.Target.Cluster, TenantKubeconfig: s.Target.TenantKubeconfig,
		Region: s.Management.Region, RegionSource: s.Management.RegionSource}
	if s.Management.CSIController != nil {
		e.CSINodes, e.CSIDaemonSets = s.Tenant.CSINodes, s.Tenant.CSIDaemonSets
		if e.CSINodes == nil {
			e.CSINodes = map[string][]CSINodePod{}
		}
	}
	var machines []worker
	for _, m := range s.clusterMachines() {
		w := worker{Machine: m}
		if pm := s.proxmoxMachine(m.InfrastructureRef); pm != nil && m.InfrastructureRef != "" {
			w.VMID, w.ProxmoxNode, w.BootVolumeGiB = pm.VMID, pm.ProxmoxNode, pm.BootVolumeGiB
		}
		machines = append(machines, w)
	}
	nodes := slices.Clone(s.Tenant.Nodes)
	byID := map[string]worker{}
	byNode := map[string]worker{}
	for _, m := range machines {
		if m.ProviderID != "" {
			byID[m.ProviderID] = m
		}
		if m.NodeRef != "" {
			byNode[m.NodeRef] = m
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	matched := map[string]bool{}
	rows := make([]Row, 0, len(nodes))
	for _, n := range nodes {
		r := judgeNode(n, byID, byNode, machines, e)
		if r.Machine != "" {
			matched[r.Machine] = true
		}
		rows = append(rows, r)
	}
	return append(rows, orphanMachines(machines, matched, e)...)
}

func judgeNode(n Node, byID, byNode map[string]worker, machines []worker, e expect) Row {
	r := Row{Node: n.Name, ProviderID: n.ProviderID, Region: n.Labels[LabelRegion], Zone: n.Labels[LabelZone]}
	checkProviderID(&r, n, byID, byNode, machines, e)
	for _, m := range machines {
		if m.Name == r.Machine {
			r.VM, r.Address, r.State = vmLabel(m), m.Address, m.Phase
			checkZone(&r, m, e)
			checkDisk(&r, n, m, e)
		}
	}
	checkTopology(&r, e)
	if n.Uninitialized {
		r.fail(CodeUninitialized, "still tainted "+TaintUninitialized,
			"the CCM has not initialised the Node: "+e.ccmLogs()+"; a token scoped to /pool/<pool> sees only VMs in that pool (instance not found)")
	}
	checkCSINode(&r, e)
	r.OK = len(r.Problems) == 0
	return r
}

// checkTopology checks the labels the CCM writes when it initialises a
// Node: without them the CSI node plugin exits with "Failed to get region
// or zone for node"; a region other than the CCM's own names a cluster the
// CSI controller has no credentials for.
func checkTopology(r *Row, e expect) {
	const pitfall = "without it the CSI node plugin exits with \"Failed to get region or zone for node\" and PVCs never bind"
	if r.Region == "" {
		r.fail(CodeNoTopologyLabels, "no "+LabelRegion+" label", "the CCM sets it when it initialises the Node; "+pitfall+": "+e.ccmLogs())
	}
	if r.Zone == "" {
		r.fail(CodeNoTopologyLabels, "no "+LabelZone+" label", "the CCM sets it to the Proxmox node name; "+pitfall+": "+e.ccmLogs()+", and check that its token can read the VM")
	}
	if r.Region != "" && e.Region != "" && r.Region != e.Region {
		r.fail(CodeRegionMismatch, fmt.Sprintf("region label %s, but the CCM's credentials (%s) say region %s", r.Region, e.RegionSource, termsafe.Cut(e.Region)),
			fmt.Sprintf("the CSI driver finds a Node's Proxmox cluster by this label, and the CCM writes it only when it initialises the Node: put region %s back in the credentials Secret, or replace the worker with the new region (kubectl -n %s delete machine %s)", r.Region, e.namespace(), orPlaceholder(r.Machine, "<machine>")))
	}
}

// checkCSINode checks that a ready CSI node plugin Pod runs on the Node:
// without it the Node mounts no Proxmox volume.
func checkCSINode(r *Row, e expect) {
	if e.CSINodes == nil {
		return
	}
	pods := e.CSINodes[r.Node]
	for _, p := range pods {
		if p.Ready {
			return
		}
	}
	tenant := "kubectl --kubeconfig " + orPlaceholder(e.TenantKubeconfig, "<tenant kubeconfig>") + " -n kube-system "
	if len(pods) > 0 {
		r.fail(CodeCSINodeNotReady, fmt.Sprintf("CSI node plugin Pod kube-system/%s is not ready (%s): volumes cannot be mounted here", pods[0].Name, orPlaceholder(pods[0].Reason, "not ready")),
			tenant+"logs "+pods[0].Name+" --all-containers; \"Failed to get region or zone for node\" there means the CCM has not labelled the Node")
		return
	}
	if len(e.CSIDaemonSets) == 0 {
		r.fail(CodeCSINodeNotReady, "no CSI node plugin runs in the tenant (no DaemonSet labelled "+LabelCSIName+"="+CSIPluginName+" in kube-system): no volume can be mounted",
			fmt.Sprintf("kubectl -n %s describe helmrelease %s-csi-proxmox: that release installs the node plugin in the tenant", e.namespace(), orPlaceholder(e.Cluster, "<cluster>")))
		return
	}
	r.fail(CodeCSINodeNotReady, "no CSI node plugin Pod runs on this Node: volumes cannot be mounted here",
		tenant+"describe daemonset "+strings.Join(e.CSIDaemonSets, " ")+": a taint the DaemonSet does not tolerate or a nodeSelector keeps it off the Node")
}

func (e expect) namespace() string { return orPlaceholder(e.Namespace, "<namespace>") }

// ccmLogs is the command that shows why the CCM did not initialise a Node.
func (e expect) ccmLogs() string {
	return fmt.Sprintf("kubectl -n %s logs deploy/%s-pccm", e.namespace(), orPlaceholder(e.Cluster, "<cluster>"))
}

// checkZone compares the Node's zone, the Proxmox node the CCM saw when it
// initialised the Node, with where capmox reports the VM: they differ
// after a live migration, and the CSI topology follows the label.
func checkZone(r *Row, m worker, e expect) {
	if r.Zone == "" || m.ProxmoxNode == "" || r.Zone == m.ProxmoxNode {
		return
	}
	r.fail(CodeZoneMismatch, fmt.Sprintf("zone label %s, but the VM runs on Proxmox node %s", r.Zone, termsafe.Cut(m.ProxmoxNode)),
		fmt.Sprintf("the VM moved after its Node was initialised, and volumes on node-local storage follow the label: migrate it back to %s, or replace the worker (kubectl -n %s delete machine %s)", r.Zone, e.namespace(), m.Name))
}

// TalosSystemPartitions bounds what Talos keeps of the system disk besides
// the kubelet's EPHEMERAL partition (EFI, BIOS, BOOT, META and STATE, about
// 1.2 GiB), with room for the filesystem's own metadata.
const TalosSystemPartitions = 2 << 30

// checkDisk compares the Node's filesystem with the system disk its pool
// asked for (disks.bootVolume): a capacity below 90% of the asked size,
// less TalosSystemPartitions, means the clone kept the template's smaller
// disk.
func checkDisk(r *Row, n Node, m worker, e expect) {
	if m.BootVolumeGiB == 0 || n.EphemeralStorage == 0 {
		return
	}
	asked := int64(m.BootVolumeGiB) << 30
	if n.EphemeralStorage >= asked/10*9-TalosSystemPartitions {
		return
	}
	r.fail(CodeDiskSmallerThanAsked, fmt.Sprintf("its filesystem holds %.1f GiB, but the pool asked for a %d GiB system disk (disks.bootVolume)", float64(n.EphemeralStorage)/(1<<30), m.BootVolumeGiB),
		fmt.Sprintf("the clone kept the template's smaller disk: read capmox's resize in kubectl -n %s describe proxmoxmachine %s (a token without Datastore.AllocateSpace on the disk's storage fails it), then replace the worker (kubectl -n %s delete machine %s)", e.namespace(), m.Name, e.namespace(), m.Name))
}

func checkProviderID(r *Row, n Node, byID, byNode map[string]worker, machines []worker, e expect) {
	switch {
	case n.ProviderID == "":
		r.fail(CodeNoProviderID, "no providerID", "the CCM has not initialised the Node: "+e.ccmLogs()+" (its cloud-config and its token)")
		if m, ok := byNode[n.Name]; ok {
			r.Machine = m.Name
		}
		return
	case defaultProviderID.MatchString(n.ProviderID):
		r.fail(CodeProviderIDDefaultForm, "providerID is in the CCM default form proxmox://<region>/<vmid>", "set features.provider: capmox in the CCM cloud-config so it writes proxmox://<SMBIOS UUID>, which is what capmox puts on the Machine (pxsubstrate render cluster writes it)")
	case !capmoxProviderID.MatchString(n.ProviderID):
		r.fail(CodeProviderIDForm, "providerID is not proxmox://<SMBIOS UUID>", "check which cloud provider initialised the Node; only the Proxmox CCM with features.provider: capmox writes the form capmox uses")
	}
	if m, ok := byID[n.ProviderID]; ok {
		r.Machine = m.Name
		return
	}
	for _, m := range machines {
		if m.ProviderID != "" && strings.EqualFold(m.ProviderID, n.ProviderID) {
			r.Machine = m.Name
			r.fail(CodeProviderIDCase, "providerID differs from Machine "+m.Name+"'s only in letter case", "CAPI pairs on an exact match: the SMBIOS UUID the CCM read and the one capmox wrote must be spelled alike")
			return
		}
	}
	if m, ok := byNode[n.Name]; ok {
		r.Machine = m.Name
		r.fail(CodeProviderIDMismatch, "Machine "+m.Name+" has providerID "+orNone(m.ProviderID), "CAPI pairs a Node and its Machine only on an exact providerID match; both must be proxmox://<SMBIOS UUID> of the same VM")
		return
	}
	r.fail(CodeNodeWithoutMachine, "no Machine has this providerID", "the Node belongs to no Machine of this cluster: check that it is the right cluster, and that capmox and the CCM agree on proxmox://<SMBIOS UUID>")
}

func orphanMachines(machines []worker, matched map[string]bool, e expect) []Row {
	var rows []Row
	sorted := append([]worker(nil), machines...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, m := range sorted {
		if matched[m.Name] {
			continue
		}
		r := Row{Node: "-", Machine: m.Name, ProviderID: m.ProviderID, VM: vmLabel(m), Address: m.Address, State: m.Phase}
		if m.ProviderID == "" {
			r.fail(CodeMachineNoProviderID, "Machine has no providerID yet", "capmox sets it once the VM is provisioned: kubectl -n "+e.namespace()+" describe proxmoxmachines -l "+capmox.LabelClusterName+"="+orPlaceholder(e.Cluster, "<cluster>")+" (template not found, waiting for IP)")
		} else {
			r.fail(CodeMachineWithoutNode, "no tenant Node has this providerID", "the VM has not joined, or its Node's providerID differs: check the worker's Talos config and the CCM ("+e.ccmLogs()+")")
		}
		rows = append(rows, r)
	}
	return rows
}

func orNone(s string) string { return orPlaceholder(s, "(none)") }

func orPlaceholder(s, placeholder string) string {
	if s == "" {
		return placeholder
	}
	return s
}

// vmLabel is "<vmid>@<pve node>" (what `qm config <vmid>` on that node shows),
// or empty when the ProxmoxMachine has not reported it.
func vmLabel(m worker) string {
	if m.VMID == 0 {
		return ""
	}
	if m.ProxmoxNode == "" {
		return fmt.Sprint(m.VMID)
	}
	return fmt.Sprintf("%d@%s", m.VMID, termsafe.Cut(m.ProxmoxNode))
}
