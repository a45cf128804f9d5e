package verify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Finding is a problem that keeps the workers of a cluster out as a whole
// (or, a Warning, one that verify reports without failing).
type Finding struct {
	Code    string `json:"code"`
	Problem string `json:"problem"`
	Fix     string `json:"fix"`
	// Warning marks a finding that does not keep the workers out (a
	// gateway without failover): it is reported, but verify still passes.
	Warning bool `json:"warning,omitempty"`
	// VMID and Node name the Proxmox guest a finding is about, when it is
	// about one (the worker VM checks).
	VMID int    `json:"vmid,omitempty"`
	Node string `json:"node,omitempty"`
	// Healing says what the controller's pool healing does about the
	// finding, and when (DuplicateWorkerVM and WorkerVMStopped).
	Healing string `json:"healing,omitempty"`
}

// Report is Judge's verdict.
type Report struct {
	// Findings are the problems of the cluster as a whole: the management
	// cluster's, then Proxmox VE's, in the order verify prints them.
	Findings []Finding
	// Rows are one per Node, sorted by name, then one per Machine that no
	// Node matched.
	Rows []Row
}

// Errors counts the findings that are not warnings.
func (r Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if !f.Warning {
			n++
		}
	}
	return n
}

// Judge judges a snapshot; it reads nothing.
func Judge(s *Snapshot) Report {
	return Report{Findings: slices.Concat(checkManagement(s), checkHAResources(s), CheckWorkerVMs(s)), Rows: judgeRows(s)}
}

// Finding codes of the management cluster.
const (
	CodeIPAMProviderMissing   = "IPAMProviderMissing"
	CodeManagedByAnnotation   = "ManagedByAnnotation"
	CodeLoadBalancerNoAddress = "LoadBalancerNoAddress"
	CodeNoHostEntry           = "NoHostEntry"
	CodeStaleHostEntry        = "StaleHostEntry"
	CodeControllerNotReady    = "ControllerNotReady"
	CodeIPPoolExhausted       = "IPPoolExhausted"
)

// checkManagement looks for the management-cluster mistakes that keep a
// Proxmox-backed cluster's workers out: no CAPI in-cluster IPAM provider
// (capmox has no DHCP mode, so the ProxmoxCluster never becomes Ready), a
// ProxmoxCluster carrying cluster.x-k8s.io/managed-by (Cluster API then
// never sets its ownerRef and capmox waits forever), a control plane
// Service without a LoadBalancer address, a Machine whose TalosConfig
// maps no (or another) address to the control plane endpoint, controllers
// that are not ready and an IP pool without a free address. It also warns
// (Warning set) of a ProxmoxNetwork of the namespace whose gateway group
// cannot fail over, and of workers of a pool with proxmox.ha that share a
// Proxmox node.
func checkManagement(s *Snapshot) []Finding {
	m, ns, cluster := s.Management, s.Target.Namespace, s.Target.Cluster
	var out []Finding
	if !m.IPAMServed {
		out = append(out, Finding{
			Code:    CodeIPAMProviderMissing,
			Problem: "the management cluster serves no InClusterIPPool: the CAPI in-cluster IPAM provider is not installed, and capmox has no DHCP mode, so the ProxmoxCluster never becomes Ready",
			Fix:     "install the cozystack.capi-provider-ipam-in-cluster package (cozystack.capi-provider-infra-proxmox pulls it in)",
		})
	}
	if pc := m.ProxmoxCluster; pc != nil {
		if _, ok := pc.Annotations[capmox.AnnotationManagedBy]; ok {
			out = append(out, Finding{
				Code:    CodeManagedByAnnotation,
				Problem: fmt.Sprintf("ProxmoxCluster %s/%s carries %s: Cluster API never sets its ownerRef, capmox stops at \"Waiting for Cluster Controller to set OwnerRef\" and no Machine gets an address", ns, cluster, capmox.AnnotationManagedBy),
				Fix:     fmt.Sprintf("kubectl -n %s annotate proxmoxcluster %s %s-", ns, cluster, capmox.AnnotationManagedBy),
			})
		}
	}
	return slices.Concat(out, checkEndpoint(s), checkControllers(s), checkGateways(s), checkPoolHA(s))
}

// checkEndpoint looks at what a worker needs to reach its control plane at
// https://<cluster>.<ns>.svc:6443 from a Proxmox VM: a LoadBalancer
// address on the control plane Service, and a host entry mapping that name
// to it in every Machine's TalosConfig. A worker whose config lacks the
// entry resolves the name through its pool's DNS servers, which do not
// know it, and never joins.
func checkEndpoint(s *Snapshot) []Finding {
	m, namespace, cluster := s.Management, s.Target.Namespace, s.Target.Cluster
	var out []Finding
	address := ""
	if svc := m.Service; svc != nil {
		address = svc.LoadBalancerIP
		if svc.Type == "LoadBalancer" && address == "" {
			out = append(out, Finding{
				Code:    CodeLoadBalancerNoAddress,
				Problem: fmt.Sprintf("Service %s/%s has no LoadBalancer address: workers outside the management cluster cannot reach their control plane", namespace, cluster),
				Fix:     fmt.Sprintf("kubectl -n %s describe service %s, then check the management cluster's LoadBalancer provider and its address pool", namespace, cluster),
			})
		}
	}
	host := cluster + "." + namespace + ".svc"
	for _, mc := range s.clusterMachines() {
		entries, ok := m.TalosConfigs[mc.BootstrapName]
		if mc.BootstrapKind != talosConfigKind.Kind || !ok {
			continue
		}
		ip := hostEntryIP(entries, host)
		shown := termsafe.Cut(ip) // the TalosConfig's text
		switch {
		case ip == "":
			out = append(out, Finding{
				Code:    CodeNoHostEntry,
				Problem: fmt.Sprintf("Machine %s: its TalosConfig %s maps no address to %s, so the worker cannot resolve its control plane endpoint", mc.Name, mc.BootstrapName, host),
				Fix:     fmt.Sprintf("kubectl -n %s get jobs -l %s=%s; once the host-entries Job has patched the TalosConfigTemplate, kubectl -n %s delete machine %s", namespace, capmox.LabelClusterName, cluster, namespace, mc.Name),
			})
		case address != "" && ip != address:
			out = append(out, Finding{
				Code:    CodeStaleHostEntry,
				Problem: fmt.Sprintf("Machine %s: its TalosConfig %s maps %s to %s, but the Service's LoadBalancer address is %s", mc.Name, mc.BootstrapName, host, shown, termsafe.Cut(address)),
				Fix:     fmt.Sprintf("render the pool again with the live Service in --lookup, apply it, and let the MachineDeployment roll (or kubectl -n %s delete machine %s)", namespace, mc.Name),
			})
		}
	}
	return out
}

// hostEntryIP returns the address the entries map host to, "" when none
// does.
func hostEntryIP(entries []HostEntry, host string) string {
	for _, e := range entries {
		for _, a := range e.Aliases {
			if strings.EqualFold(a, host) && e.IP != "" {
				return e.IP
			}
		}
	}
	return ""
}

// checkControllers looks at the cluster's CCM and CSI controller
// Deployments (a missing one is not judged here: the Node rows name what
// its absence causes), and at the InClusterIPPool capmox made from
// ipv4Config: a CCM that is not running leaves every worker tainted, a CSI
// controller that is not running binds no PVC, and a pool without a free
// address leaves new Machines waiting.
func checkControllers(s *Snapshot) []Finding {
	m, namespace, cluster := s.Management, s.Target.Namespace, s.Target.Cluster
	var out []Finding
	for _, d := range []struct {
		dep        *Deployment
		name, what string
	}{{m.CCM, cluster + capmox.SuffixCCM, "cloud-controller-manager"}, {m.CSIController, cluster + capmox.SuffixCSIController, "CSI controller"}} {
		if d.dep == nil {
			continue
		}
		want, ready := d.dep.Replicas, d.dep.Available
		if want > 0 && ready < want {
			out = append(out, Finding{Code: CodeControllerNotReady,
				Problem: fmt.Sprintf("the %s Deployment %s/%s has %d of %d replicas available", d.what, namespace, d.name, ready, want),
				Fix:     fmt.Sprintf("kubectl -n %s logs deploy/%s -c %s, then the main container: a missing credentials key or a token that cannot read the VMs shows there", namespace, d.name, "build-cloud-config")})
		}
	}
	if p := m.IPPool; p != nil && p.FreeKnown && p.Free == 0 {
		out = append(out, Finding{Code: CodeIPPoolExhausted,
			Problem: fmt.Sprintf("InClusterIPPool %s/%s has no free address: new Machines wait for an IPAddressClaim", namespace, p.Name),
			Fix:     "add addresses to proxmox.ipv4Config.addresses of the Kubernetes object and render the cluster again, or lower the pools' maxReplicas"})
	}
	return out
}
