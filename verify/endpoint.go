package verify

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// Finding codes of the control plane endpoint checks.
const (
	CodeLoadBalancerNoAddress = "LoadBalancerNoAddress"
	CodeNoHostEntry           = "NoHostEntry"
	CodeStaleHostEntry        = "StaleHostEntry"
)

// hostEntriesPath is the Talos machine config path of the host entries,
// as the renderer writes it.
const hostEntriesPath = capmox.HostEntriesPath

// capiVersions are the Cluster API versions, newest first.
var capiVersions = []string{"v1beta2", "v1beta1"}

// checkEndpoint looks at what a worker needs to reach its control plane at
// https://<cluster>.<ns>.svc:6443 from a Proxmox VM: a LoadBalancer
// address on the control plane Service, and a host entry mapping that name
// to it in every Machine's TalosConfig. A worker whose config lacks the
// entry resolves the name through its pool's DNS servers, which do not
// know it, and never joins.
func checkEndpoint(ctx context.Context, mgmt client.Reader, mapper meta.RESTMapper, namespace, cluster string) ([]ManagementFinding, error) {
	svc := &unstructured.Unstructured{}
	svc.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Service"})
	var out []ManagementFinding
	address := ""
	switch err := mgmt.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cluster}, svc); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("cannot read Service %s/%s: %w", namespace, cluster, err)
	default:
		address = loadBalancerIP(svc)
		if typ, _, _ := unstructured.NestedString(svc.Object, "spec", "type"); typ == "LoadBalancer" && address == "" {
			out = append(out, ManagementFinding{
				Code:    CodeLoadBalancerNoAddress,
				Problem: fmt.Sprintf("Service %s/%s has no LoadBalancer address: workers outside the management cluster cannot reach their control plane", namespace, cluster),
				Fix:     fmt.Sprintf("kubectl -n %s describe service %s, then check the management cluster's LoadBalancer provider and its address pool", namespace, cluster),
			})
		}
	}
	configs, err := machineConfigs(ctx, mgmt, mapper, namespace, cluster)
	if err != nil {
		return nil, err
	}
	host := cluster + "." + namespace + ".svc"
	for _, mc := range configs {
		ip := hostEntryIP(mc.config, host)
		shown := termsafe.Cut(ip) // the TalosConfig's text
		switch {
		case ip == "":
			out = append(out, ManagementFinding{
				Code:    CodeNoHostEntry,
				Problem: fmt.Sprintf("Machine %s: its TalosConfig %s maps no address to %s, so the worker cannot resolve its control plane endpoint", mc.machine, mc.config.GetName(), host),
				Fix:     fmt.Sprintf("kubectl -n %s get jobs -l %s=%s; once the host-entries Job has patched the TalosConfigTemplate, kubectl -n %s delete machine %s", namespace, LabelClusterName, cluster, namespace, mc.machine),
			})
		case address != "" && ip != address:
			out = append(out, ManagementFinding{
				Code:    CodeStaleHostEntry,
				Problem: fmt.Sprintf("Machine %s: its TalosConfig %s maps %s to %s, but the Service's LoadBalancer address is %s", mc.machine, mc.config.GetName(), host, shown, termsafe.Cut(address)),
				Fix:     fmt.Sprintf("render the pool again with the live Service in --lookup, apply it, and let the MachineDeployment roll (or kubectl -n %s delete machine %s)", namespace, mc.machine),
			})
		}
	}
	return out, nil
}

func loadBalancerIP(svc *unstructured.Unstructured) string {
	ingress, _, _ := unstructured.NestedSlice(svc.Object, "status", "loadBalancer", "ingress")
	for _, i := range ingress {
		if m, ok := i.(map[string]any); ok {
			if ip, _ := m["ip"].(string); ip != "" {
				return ip
			}
		}
	}
	return ""
}

// hostEntryIP returns the address the config's extraHostEntries patch maps
// host to, "" when none does.
func hostEntryIP(config *unstructured.Unstructured, host string) string {
	patches, _, _ := unstructured.NestedSlice(config.Object, "spec", "configPatches")
	for _, p := range patches {
		m, ok := p.(map[string]any)
		if !ok || m["path"] != hostEntriesPath {
			continue
		}
		entries, _ := m["value"].([]any)
		for _, e := range entries {
			em, _ := e.(map[string]any)
			ip, _ := em["ip"].(string)
			aliases, _ := em["aliases"].([]any)
			for _, a := range aliases {
				if s, _ := a.(string); strings.EqualFold(s, host) && ip != "" {
					return ip
				}
			}
		}
	}
	return ""
}

type machineConfig struct {
	machine string
	config  *unstructured.Unstructured
}

// machineConfigs reads the TalosConfig of every Machine of the cluster;
// none when the management cluster serves no Machine or TalosConfig kind.
func machineConfigs(ctx context.Context, mgmt client.Reader, mapper meta.RESTMapper, namespace, cluster string) ([]machineConfig, error) {
	mm, err := mapper.RESTMapping(schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Machine"}, capiVersions...)
	if meta.IsNoMatchError(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("cannot ask the API server whether it serves Machine: %w", err)
	}
	tm, err := mapper.RESTMapping(schema.GroupKind{Group: "bootstrap.cluster.x-k8s.io", Kind: "TalosConfig"}, "v1alpha3")
	if meta.IsNoMatchError(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("cannot ask the API server whether it serves TalosConfig: %w", err)
	}
	ml := &unstructured.UnstructuredList{}
	ml.SetGroupVersionKind(mm.GroupVersionKind.GroupVersion().WithKind("MachineList"))
	if err := mgmt.List(ctx, ml, client.InNamespace(namespace), client.MatchingLabels{LabelClusterName: cluster}); err != nil {
		return nil, fmt.Errorf("cannot list the Machines of %s/%s: %w", namespace, cluster, err)
	}
	var out []machineConfig
	for _, m := range ml.Items {
		kind, _, _ := unstructured.NestedString(m.Object, "spec", "bootstrap", "configRef", "kind")
		name, _, _ := unstructured.NestedString(m.Object, "spec", "bootstrap", "configRef", "name")
		if kind != "TalosConfig" || name == "" {
			continue
		}
		tc := &unstructured.Unstructured{}
		tc.SetGroupVersionKind(tm.GroupVersionKind)
		switch err := mgmt.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, tc); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("cannot read TalosConfig %s/%s: %w", namespace, name, err)
		}
		out = append(out, machineConfig{machine: m.GetName(), config: tc})
	}
	return out, nil
}
