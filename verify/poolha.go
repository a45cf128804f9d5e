package verify

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Finding codes of pool HA.
const (
	// CodeHAWorkersShareNode: workers of a pool with proxmox.ha run on one
	// Proxmox node, so losing it takes more than one of them.
	CodeHAWorkersShareNode = "HAWorkersShareNode"
	// CodeHAResourceWithoutMachine: an HA resource the controller made
	// names a Machine that is gone.
	CodeHAResourceWithoutMachine = "HAResourceWithoutMachine"
	// CodeHAResourcesNotVisible: the token verify was given may not read
	// the HA resources (Sys.Audit on /), so the check above could not run.
	CodeHAResourcesNotVisible = "HAResourcesNotVisible"
)

// checkPoolHA names each Proxmox node that carries more than one worker of
// a pool with proxmox.ha (the Machines the renderer labels
// capmox.LabelHA, grouped by capmox.LabelDeploymentName), from the nodes
// capmox records on the ProxmoxMachines (status.proxmoxNode, which capmox
// moves when HA moved the VM). Machines being deleted do not count. It is
// a warning: the workers run, but not apart.
func checkPoolHA(s *Snapshot) []Finding {
	namespace := s.Target.Namespace
	on := map[string]map[string][]string{} // pool -> node -> machines
	for _, m := range s.clusterMachines() {
		pool := m.Labels[capmox.LabelDeploymentName]
		if m.Labels[capmox.LabelHA] != "true" || pool == "" || m.InfrastructureRef == "" || m.Deleting {
			continue
		}
		pm := s.proxmoxMachine(m.InfrastructureRef)
		if pm == nil || pm.ProxmoxNode == "" {
			continue
		}
		if on[pool] == nil {
			on[pool] = map[string][]string{}
		}
		on[pool][pm.ProxmoxNode] = append(on[pool][pm.ProxmoxNode], m.Name)
	}
	var out []Finding
	for pool, nodes := range on {
		for node, machines := range nodes {
			if len(machines) < 2 {
				continue
			}
			slices.Sort(machines)
			out = append(out, Finding{Code: CodeHAWorkersShareNode, Warning: true,
				Problem: fmt.Sprintf("pool %s/%s has proxmox.ha, and its workers %s share Proxmox node %s: losing it takes %d of them",
					namespace, pool, termsafe.Cut(strings.Join(machines, ", ")), termsafe.Cut(node), len(machines)),
				Fix: fmt.Sprintf("the HA manager moves them apart once both are HA resources in the pool's rule; if they stay, read the Events of MachineDeployment %s/%s "+
					"(HANotEnoughNodes: more workers than Proxmox nodes; HADisabled: the controller runs without --proxmox-ha-credentials; HAUnsupported: Proxmox VE 8)", namespace, pool)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Problem < out[j].Problem })
	return out
}

// checkHAResources names each HA resource whose Machine is in the
// namespace and gone: the controller's sweep removes those, so one that
// stays means the controller does not run with the pool HA token. An HA
// resource keeps its VM from being destroyed, and asks the HA manager to
// start it. A token that may not read the HA resources is a warning
// naming the privilege, not a pass; without Proxmox VE nothing is judged.
func checkHAResources(s *Snapshot) []Finding {
	p, namespace := s.Proxmox, s.Target.Namespace
	switch {
	case p == nil:
		return nil
	case p.HAHidden:
		return []Finding{{Code: CodeHAResourcesNotVisible, Warning: true,
			Problem: fmt.Sprintf("token %s may not read the HA resources: HA resources left by gone Machines were not looked for", p.TokenID),
			Fix:     "run verify again with a token holding Sys.Audit on / (the pool HA token, platform.ha)"}}
	}
	have := map[string]bool{}
	for _, m := range s.Management.Machines {
		have[namespace+"/"+m.Name] = true
	}
	var out []Finding
	for _, r := range p.HAResources {
		ns, _, _ := strings.Cut(r.Machine, "/")
		if ns != namespace || have[r.Machine] {
			continue
		}
		// The SID and the Machine come from the Proxmox VE API: cut.
		r.SID, r.Machine = termsafe.Cut(r.SID), termsafe.Cut(r.Machine)
		out = append(out, Finding{Code: CodeHAResourceWithoutMachine,
			Problem: fmt.Sprintf("HA resource %s was made for Machine %s, which is gone: Proxmox refuses to destroy its VM, and the HA manager keeps starting it", r.SID, r.Machine),
			Fix: fmt.Sprintf("the controller's sweep removes it within --proxmox-ha-sweep-interval when it runs with --proxmox-ha-credentials; by hand: pvesh delete /cluster/ha/resources/%s, then remove the VM if it is still there",
				r.SID)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Problem < out[j].Problem })
	return out
}
