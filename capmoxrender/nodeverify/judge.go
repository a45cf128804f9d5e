package nodeverify

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
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

// Node is what Judge needs of a tenant Node.
type Node struct {
	Name          string
	ProviderID    string
	Labels        map[string]string
	Uninitialized bool
}

// Machine is what Judge needs of a CAPI Machine.
type Machine struct {
	Name       string
	ProviderID string
	NodeRef    string
	// VMID and ProxmoxNode come from the Machine's ProxmoxMachine, when known.
	VMID        int64
	ProxmoxNode string
	// Address is the Machine's InternalIP (else its first address) and
	// Phase its CAPI phase (Provisioning, Running, ...), when reported.
	Address, Phase string
}

// Row is the verdict on one Node (or on a Machine no Node matches).
type Row struct {
	Node       string   `json:"node"`
	Machine    string   `json:"machine"`
	ProviderID string   `json:"providerID"`
	Region     string   `json:"region"`
	Zone       string   `json:"zone"`
	VM         string   `json:"vm,omitempty"`
	Address    string   `json:"address,omitempty"`
	State      string   `json:"state,omitempty"`
	OK         bool     `json:"ok"`
	Problems   []string `json:"problems,omitempty"`
	Fixes      []string `json:"fixes,omitempty"`
}

func (r *Row) fail(problem, fix string) {
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

// Judge returns one row per Node, sorted by name, then one row per Machine
// that no Node matched.
func Judge(nodes []Node, machines []Machine) []Row {
	byID := map[string]Machine{}
	byNode := map[string]Machine{}
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
		r := judgeNode(n, byID, byNode, machines)
		if r.Machine != "" {
			matched[r.Machine] = true
		}
		rows = append(rows, r)
	}
	return append(rows, orphanMachines(machines, matched)...)
}

func judgeNode(n Node, byID, byNode map[string]Machine, machines []Machine) Row {
	r := Row{Node: n.Name, ProviderID: n.ProviderID, Region: n.Labels[LabelRegion], Zone: n.Labels[LabelZone]}
	checkProviderID(&r, n, byID, byNode, machines)
	for _, m := range machines {
		if m.Name == r.Machine {
			r.VM, r.Address, r.State = vmLabel(m), m.Address, m.Phase
			checkZone(&r, m)
		}
	}
	if r.Region == "" {
		r.fail("no "+LabelRegion+" label", "the CCM sets it when it initialises the Node; without it the CSI node plugin exits with \"Failed to get region or zone for node\" and PVCs never bind: check the <cluster>-pccm Pod")
	}
	if r.Zone == "" {
		r.fail("no "+LabelZone+" label", "the CCM sets it to the Proxmox node name; check the <cluster>-pccm Pod and that its token can read the VM")
	}
	if n.Uninitialized {
		r.fail("still tainted "+TaintUninitialized, "the CCM has not initialised the Node: check the <cluster>-pccm logs; a token scoped to /pool/<pool> sees only VMs in that pool (instance not found)")
	}
	r.OK = len(r.Problems) == 0
	return r
}

// checkZone compares the Node's zone, the Proxmox node the CCM saw when it
// initialised the Node, with where capmox reports the VM: they differ
// after a live migration, and the CSI topology follows the label.
func checkZone(r *Row, m Machine) {
	if r.Zone == "" || m.ProxmoxNode == "" || r.Zone == m.ProxmoxNode {
		return
	}
	r.fail(fmt.Sprintf("zone label %s, but the VM runs on Proxmox node %s", r.Zone, m.ProxmoxNode),
		fmt.Sprintf("the VM moved after its Node was initialised, and volumes on node-local storage follow the label: migrate it back to %s, or replace the worker (kubectl delete machine %s in the cluster's namespace)", r.Zone, m.Name))
}

func checkProviderID(r *Row, n Node, byID, byNode map[string]Machine, machines []Machine) {
	switch {
	case n.ProviderID == "":
		r.fail("no providerID", "the CCM has not initialised the Node: check the <cluster>-pccm Pod, its cloud-config and its token")
		if m, ok := byNode[n.Name]; ok {
			r.Machine = m.Name
		}
		return
	case defaultProviderID.MatchString(n.ProviderID):
		r.fail("providerID is in the CCM default form proxmox://<region>/<vmid>", "set features.provider: capmox in the CCM cloud-config so it writes proxmox://<SMBIOS UUID>, which is what capmox puts on the Machine")
	case !capmoxProviderID.MatchString(n.ProviderID):
		r.fail("providerID is not proxmox://<SMBIOS UUID>", "check which cloud provider initialised the Node; only the Proxmox CCM with features.provider: capmox writes the form capmox uses")
	}
	if m, ok := byID[n.ProviderID]; ok {
		r.Machine = m.Name
		return
	}
	for _, m := range machines {
		if m.ProviderID != "" && strings.EqualFold(m.ProviderID, n.ProviderID) {
			r.Machine = m.Name
			r.fail("providerID differs from Machine "+m.Name+"'s only in letter case", "CAPI pairs on an exact match: the SMBIOS UUID the CCM read and the one capmox wrote must be spelled alike")
			return
		}
	}
	if m, ok := byNode[n.Name]; ok {
		r.Machine = m.Name
		r.fail("Machine "+m.Name+" has providerID "+orNone(m.ProviderID), "CAPI pairs a Node and its Machine only on an exact providerID match; both must be proxmox://<SMBIOS UUID> of the same VM")
		return
	}
	r.fail("no Machine has this providerID", "the Node belongs to no Machine of this cluster: check that it is the right cluster, and that capmox and the CCM agree on proxmox://<SMBIOS UUID>")
}

func orphanMachines(machines []Machine, matched map[string]bool) []Row {
	var rows []Row
	sorted := append([]Machine(nil), machines...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, m := range sorted {
		if matched[m.Name] {
			continue
		}
		r := Row{Node: "-", Machine: m.Name, ProviderID: m.ProviderID, VM: vmLabel(m), Address: m.Address, State: m.Phase}
		if m.ProviderID == "" {
			r.fail("Machine has no providerID yet", "capmox sets it once the VM is provisioned: check the ProxmoxMachine conditions (template not found, waiting for IP)")
		} else {
			r.fail("no tenant Node has this providerID", "the VM has not joined, or its Node's providerID differs: check the worker's Talos config and the CCM")
		}
		rows = append(rows, r)
	}
	return rows
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// vmLabel is "<vmid>@<pve node>" (what `qm config <vmid>` on that node shows),
// or empty when the ProxmoxMachine has not reported it.
func vmLabel(m Machine) string {
	if m.VMID == 0 {
		return ""
	}
	if m.ProxmoxNode == "" {
		return fmt.Sprint(m.VMID)
	}
	return fmt.Sprintf("%d@%s", m.VMID, m.ProxmoxNode)
}
