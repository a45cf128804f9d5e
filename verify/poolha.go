package verify

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// The labels pool HA selects by, as the renderer writes them.
const (
	labelHA             = capmox.LabelHA
	labelDeploymentName = capmox.LabelDeploymentName
)

// checkPoolHA names each Proxmox node that carries more than one worker of
// a pool with proxmox.ha, from the nodes capmox records on the
// ProxmoxMachines (status.proxmoxNode, which capmox moves when HA moved
// the VM). Machines being deleted do not count. It is a warning: the
// workers run, but not apart.
func checkPoolHA(ctx context.Context, mgmt client.Reader, mapper meta.RESTMapper, namespace, cluster string) ([]ManagementFinding, error) {
	list, err := haMachines(ctx, mgmt, mapper, namespace, client.MatchingLabels{LabelClusterName: cluster, labelHA: "true"})
	if err != nil || list == nil {
		return nil, err
	}
	on := map[string]map[string][]string{} // pool -> node -> machines
	for _, m := range list.Items {
		pool := m.GetLabels()[labelDeploymentName]
		ref, _, _ := unstructured.NestedString(m.Object, "spec", "infrastructureRef", "name")
		if pool == "" || ref == "" || m.GetDeletionTimestamp() != nil {
			continue
		}
		pm, err := getServed(ctx, mgmt, mapper, schema.GroupKind{Group: "infrastructure.cluster.x-k8s.io", Kind: "ProxmoxMachine"}, capmoxVersions, namespace, ref)
		if err != nil || pm == nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		node, _, _ := unstructured.NestedString(pm.Object, "status", "proxmoxNode")
		if node == "" {
			continue
		}
		if on[pool] == nil {
			on[pool] = map[string][]string{}
		}
		on[pool][node] = append(on[pool][node], m.GetName())
	}
	var out []ManagementFinding
	for pool, nodes := range on {
		for node, machines := range nodes {
			if len(machines) < 2 {
				continue
			}
			slices.Sort(machines)
			out = append(out, ManagementFinding{Code: CodeHAWorkersShareNode, Warning: true,
				Problem: fmt.Sprintf("pool %s/%s has proxmox.ha, and its workers %s share Proxmox node %s: losing it takes %d of them",
					namespace, pool, termsafe.Cut(strings.Join(machines, ", ")), termsafe.Cut(node), len(machines)),
				Fix: fmt.Sprintf("the HA manager moves them apart once both are HA resources in the pool's rule; if they stay, read the Events of MachineDeployment %s/%s "+
					"(HANotEnoughNodes: more workers than Proxmox nodes; HADisabled: the controller runs without --proxmox-ha-credentials; HAUnsupported: Proxmox VE 8)", namespace, pool)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Problem < out[j].Problem })
	return out, nil
}

// haMachines lists the Machines of the namespace the selector picks, in
// the newest version served; nil when Cluster API is not installed.
func haMachines(ctx context.Context, mgmt client.Reader, mapper meta.RESTMapper, namespace string, sel client.MatchingLabels) (*unstructured.UnstructuredList, error) {
	return listServed(ctx, mgmt, mapper, schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Machine"}, capiVersions, namespace, sel)
}

// HAResource is an HA resource the proxmox-network controller made
// (pveha.Resource with its comment read): its id and its Machine's
// namespace/name.
type HAResource struct {
	SID     string
	Machine string
}

// CheckHAResources names each HA resource whose Machine is in namespace
// and gone: the controller's sweep removes those, so one that stays means
// the controller does not run with the pool HA token. An HA resource
// keeps its VM from being destroyed, and asks the HA manager to start it.
func CheckHAResources(ctx context.Context, mgmt client.Reader, mapper meta.RESTMapper, namespace string, resources []HAResource) ([]ManagementFinding, error) {
	list, err := haMachines(ctx, mgmt, mapper, namespace, nil)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	if list != nil {
		for _, m := range list.Items {
			have[namespace+"/"+m.GetName()] = true
		}
	}
	var out []ManagementFinding
	for _, r := range resources {
		ns, _, _ := strings.Cut(r.Machine, "/")
		if ns != namespace || have[r.Machine] {
			continue
		}
		// The SID and the Machine come from the Proxmox VE API: cut.
		r.SID, r.Machine = termsafe.Cut(r.SID), termsafe.Cut(r.Machine)
		out = append(out, ManagementFinding{Code: CodeHAResourceWithoutMachine,
			Problem: fmt.Sprintf("HA resource %s was made for Machine %s, which is gone: Proxmox refuses to destroy its VM, and the HA manager keeps starting it", r.SID, r.Machine),
			Fix: fmt.Sprintf("the controller's sweep removes it within --proxmox-ha-sweep-interval when it runs with --proxmox-ha-credentials; by hand: pvesh delete /cluster/ha/resources/%s, then remove the VM if it is still there",
				r.SID)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Problem < out[j].Problem })
	return out, nil
}
