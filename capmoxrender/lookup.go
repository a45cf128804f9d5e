package capmoxrender

import (
	"context"
	"errors"
	"fmt"

	"github.com/pxsubstrate/pxsubstrate/cozyid"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// SubstrateLookup answers the live questions of the substrate guards. A nil
// SubstrateLookup means offline rendering: the guards do nothing, as the
// charts' lookups do without an API server.
type SubstrateLookup interface {
	// ClusterInfrastructureKind returns spec.infrastructureRef.kind of the
	// live cluster.x-k8s.io Cluster, and found=false when there is none.
	ClusterInfrastructureKind(ctx context.Context, namespace, name string) (kind string, found bool, err error)
	// MachineDeploymentInfrastructureKind returns
	// spec.template.spec.infrastructureRef.kind of the live MachineDeployment.
	MachineDeploymentInfrastructureKind(ctx context.Context, namespace, name string) (kind string, found bool, err error)
}

// ClusterLookup reads the tenant's own objects in the release namespace.
type ClusterLookup interface {
	// KubernetesVersion returns spec.version of the apps.cozystack.io
	// Kubernetes object name, and found=false when there is none.
	KubernetesVersion(ctx context.Context, namespace, name string) (version string, found bool, err error)
	// LoadBalancerAddress returns the first status.loadBalancer.ingress IP
	// of the core Service name; found=false when there is no Service, and
	// "" when it has no address yet.
	LoadBalancerAddress(ctx context.Context, namespace, name string) (address string, found bool, err error)
	// AllowedNodes returns spec.proxmox.allowedNodes of the
	// apps.cozystack.io Kubernetes object name (empty: every node), and
	// found=false when there is none.
	AllowedNodes(ctx context.Context, namespace, name string) (nodes []string, found bool, err error)
}

// NetworkLookup reads proxmox.cozystack.io ProxmoxNetwork objects of the
// release namespace (never another namespace).
type NetworkLookup interface {
	ProxmoxNetwork(ctx context.Context, namespace, name string) (ProxmoxNetwork, bool, error)
}

// ProxmoxNetwork is the status of a Proxmox-backed VPC subnet that the
// render reads: where its VLAN lives and its addressing.
type ProxmoxNetwork struct {
	Bridge string
	VLAN   int
	// VNet is status.vnet: the Proxmox SDN VNet of the VLAN when the zone
	// declares spec.sdn.mode VNets. A NIC then names the VNet as its bridge
	// and carries no VLAN tag (the VNet tags the frames itself).
	VNet    string
	MTU     int
	Gateway string
	Prefix  int
	// Ready is the Ready condition; nil when the controller has not
	// reported yet.
	Ready *Condition
}

// Condition is the part of a status condition the render reads.
type Condition struct {
	Status  string
	Reason  string
	Message string
}

// resolveNetwork looks a VPC subnet up and refuses it unless it is
// Proxmox-backed and Ready. field prefixes every message.
func resolveNetwork(ctx context.Context, l NetworkLookup, field, ns string, ref SubnetRef) (ProxmoxNetwork, string, error) {
	if ref.VPC == "" || ref.Subnet == "" {
		return ProxmoxNetwork{}, "", refuse(field, "%s: set both vpc and subnet", field)
	}
	id := string(cozyid.Subnet(ns, cozyid.VPC(ns, cozyid.VPCName(ref.VPC)), cozyid.SubnetName(ref.Subnet)))
	if l == nil {
		return ProxmoxNetwork{}, "", refuse(field, "%s: cannot resolve VPC %q subnet %q without a live lookup: pass the live ProxmoxNetwork %s/%s (--lookup) or render against the management cluster", field, ref.VPC, ref.Subnet, ns, id)
	}
	n, found, err := l.ProxmoxNetwork(ctx, ns, id)
	if errors.Is(err, ErrRefused) {
		return ProxmoxNetwork{}, "", err
	}
	if err != nil {
		return ProxmoxNetwork{}, "", fmt.Errorf("cannot look up ProxmoxNetwork %s/%s: %w: %w", ns, id, ErrLookup, err)
	}
	if !found {
		return ProxmoxNetwork{}, "", refuse(field, "%s: subnet %q of VPC %q is not Proxmox-backed (no ProxmoxNetwork %s in %s); add proxmox: {} to the subnet in the VPC application", field, ref.Subnet, ref.VPC, id, ns)
	}
	if n.Ready == nil || n.Ready.Status != "True" {
		reason, msg := "Pending", "the controller has not reported yet"
		if n.Ready != nil {
			// The condition is the API's text: cut as termsafe cuts a value.
			reason, msg = termsafe.Cut(n.Ready.Reason), termsafe.Cut(n.Ready.Message)
		}
		return ProxmoxNetwork{}, "", refuse(field, "%s: Proxmox network %s/%s (VPC %q subnet %q) is not Ready: %s: %s", field, ns, id, ref.VPC, ref.Subnet, reason, msg)
	}
	return n, id, nil
}
