package vpcrender

import (
	"bytes"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Labels and annotations the rendered objects carry.
const (
	LabelSubnetName   = "cozystack.io/subnetName"
	LabelVPCID        = "cozystack.io/vpcId"
	LabelVPCName      = "cozystack.io/vpcName"
	LabelTenantName   = "cozystack.io/tenantName"
	LabelEgressSubnet = "cozystack.io/egressSubnet"
	LabelZone         = "proxmox.cozystack.io/zone"

	// AnnotationMetric is the route metric capmox gives the default route
	// of a NIC on the pool: 100 + the subnet's index in the VPC.
	AnnotationMetric = "metric"
	// AnnotationSkipDeleteWebhook lets the pool's delete through the IPAM
	// provider's webhook while VMs hold addresses; the provider's
	// ProtectPool finalizer still keeps it until the last one is released.
	AnnotationSkipDeleteWebhook = "ipam.cluster.x-k8s.io/skip-validate-delete-webhook"
)

// NADAPIVersion is the API version of Multus' NetworkAttachmentDefinition,
// the one rendered kind without a type in api/. The Kube-OVN, in-cluster
// IPAM and ProxmoxNetwork kinds are those of api/kubeovn/v1,
// api/ipam/v1alpha2 and api/v1alpha1, with their GroupVersions.
const NADAPIVersion = "k8s.cni.cncf.io/v1"

const (
	egressPriority     = 30500
	routeMetricBase    = 100
	kubeOVNServerSock  = "/run/openvswitch/kube-ovn-daemon.sock"
	nadCNIVersion      = "0.3.0"
	providerReadyLabel = "%s.provider-network.kubernetes.io/ready"
)

// Vpc is the Kube-OVN Vpc (cluster-scoped).
type Vpc struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              VpcSpec `json:"spec"`
}

// VpcSpec holds the Vpc fields the render sets.
type VpcSpec struct {
	EnableExternal bool          `json:"enableExternal"`
	Namespaces     []string      `json:"namespaces"`
	VpcPeerings    []VpcPeering  `json:"vpcPeerings,omitempty"`
	StaticRoutes   []StaticRoute `json:"staticRoutes,omitempty"`
	PolicyRoutes   []PolicyRoute `json:"policyRoutes,omitempty"`
}

// VpcPeering is one side of a Kube-OVN VPC peering.
type VpcPeering struct {
	RemoteVpc      string `json:"remoteVpc"`
	LocalConnectIP string `json:"localConnectIP"`
}

// StaticRoute is a Kube-OVN static route.
type StaticRoute struct {
	CIDR      string `json:"cidr"`
	NextHopIP string `json:"nextHopIP"`
}

// PolicyRoute is a Kube-OVN router policy.
type PolicyRoute struct {
	Priority int    `json:"priority"`
	Action   string `json:"action"`
	Match    string `json:"match"`
}

// NetworkAttachmentDefinition is the Multus attachment of a subnet
// (namespaced).
type NetworkAttachmentDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              NADSpec `json:"spec"`
}

// NADSpec carries the CNI configuration as a JSON string.
type NADSpec struct {
	Config string `json:"config"`
}

// VpcEgressGateway is the Kube-OVN egress gateway of the VPC's
// Proxmox-backed subnets (namespaced, in the zone's gateway namespace).
type VpcEgressGateway struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              EgressGatewaySpec `json:"spec"`
}

// EgressGatewaySpec holds the VpcEgressGateway fields the render sets.
type EgressGatewaySpec struct {
	Vpc            string                 `json:"vpc"`
	Replicas       int32                  `json:"replicas"`
	InternalSubnet string                 `json:"internalSubnet"`
	ExternalSubnet string                 `json:"externalSubnet"`
	NodeSelector   []metav1.LabelSelector `json:"nodeSelector,omitempty"`
	Policies       []EgressPolicy         `json:"policies"`
}

// EgressPolicy selects the subnets whose traffic the gateway SNATs.
type EgressPolicy struct {
	SNAT    bool     `json:"snat"`
	Subnets []string `json:"subnets"`
}

// Rendering is the result of Render.
type Rendering struct {
	// VPCID is the Kube-OVN Vpc name.
	VPCID string
	// Objects are the rendered objects in apply order: the Vpc, then per
	// subnet its NAD, Subnet (*kubeovnv1.Subnet) and, when Proxmox-backed,
	// InClusterIPPool (*ipamv1alpha2.InClusterIPPool) and ProxmoxNetwork
	// (*v1alpha1.ProxmoxNetwork), then the egress gateway's objects.
	Objects []any
}

// Unstructured returns the objects as unstructured maps, ready for a
// dynamic or controller-runtime client.
func (r Rendering) Unstructured() ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(r.Objects))
	for _, o := range r.Objects {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, fmt.Errorf("cannot convert %T to unstructured: %w", o, err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// YAML returns the objects as one YAML stream, one document per object,
// ready for `kubectl apply -f -`.
func (r Rendering) YAML() ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range r.Objects {
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("cannot render %T as YAML: %w", o, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}
