package capmoxrender

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pxsubstrate/pxsubstrate/strictyaml"
	"github.com/pxsubstrate/pxsubstrate/termsafe"
)

// AppsAPIVersion is the API version of the Cozystack application objects.
const AppsAPIVersion = "apps.cozystack.io/v1alpha1"

// Kubernetes is a tenant cluster (apps.cozystack.io/v1alpha1, kind Kubernetes):
// the fields the Proxmox substrate reads. Its release is kubernetes-<name>.
type Kubernetes struct {
	Name      string
	Namespace string
	Spec      KubernetesSpec
}

// KubernetesSpec is the proxmox-relevant part of Kubernetes.spec.
type KubernetesSpec struct {
	Substrate    string         `json:"substrate,omitempty"`
	Version      string         `json:"version,omitempty"`
	ControlPlane ControlPlane   `json:"controlPlane,omitempty"`
	Proxmox      ClusterProxmox `json:"proxmox,omitempty"`
}

// ControlPlane sizes the Kamaji control plane.
type ControlPlane struct {
	Replicas *int32 `json:"replicas,omitempty"`
}

// ClusterProxmox is Kubernetes.spec.proxmox.
type ClusterProxmox struct {
	AllowedNodes []string   `json:"allowedNodes,omitempty"`
	DNSServers   []string   `json:"dnsServers,omitempty"`
	Insecure     *bool      `json:"insecure,omitempty"`
	IPv4Config   IPv4Config `json:"ipv4Config,omitempty"`
	// IPv6Config is the IPv6 pool of a dual-stack cluster, beside
	// IPv4Config (raw mode only).
	IPv6Config IPConfig       `json:"ipv6Config,omitempty"`
	Network    SubnetRef      `json:"network,omitempty"`
	Capmox     CredentialsRef `json:"capmox,omitempty"`
	CCM        CredentialsRef `json:"ccm,omitempty"`
	CSI        CSI            `json:"csi,omitempty"`
	// SchedulerHints pass capmox's node-scheduling knobs through to the
	// ProxmoxCluster.
	SchedulerHints *SchedulerHints `json:"schedulerHints,omitempty"`
}

// SchedulerHints is proxmox.schedulerHints of a Kubernetes.
type SchedulerHints struct {
	// MemoryAdjustment is the percentage of each Proxmox node's memory
	// capmox's scheduler may hand out to VMs: 100 by default, above 100
	// overcommits, 0 turns the memory check off.
	MemoryAdjustment *int64 `json:"memoryAdjustment,omitempty"`
}

// IPv4Config is the name IPConfig had before dual stack.
type IPv4Config = IPConfig

// IPConfig is a static address pool capmox allocates worker addresses
// from: proxmox.ipv4Config, and proxmox.ipv6Config of a dual-stack cluster.
type IPConfig struct {
	Addresses []string `json:"addresses,omitempty"`
	Gateway   string   `json:"gateway,omitempty"`
	Prefix    *int     `json:"prefix,omitempty"`
}

// SubnetRef names a Proxmox-backed VPC subnet.
type SubnetRef struct {
	VPC    string `json:"vpc,omitempty"`
	Subnet string `json:"subnet,omitempty"`
}

// Set reports whether either half is given.
func (s SubnetRef) Set() bool { return s.VPC != "" || s.Subnet != "" }

// CredentialsRef names a Secret with url, token_id, token_secret and region.
type CredentialsRef struct {
	CredentialsSecretName string `json:"credentialsSecretName,omitempty"`
}

// CSI configures the Proxmox CSI driver.
type CSI struct {
	Enabled               *bool          `json:"enabled,omitempty"`
	CredentialsSecretName string         `json:"credentialsSecretName,omitempty"`
	StorageClasses        []StorageClass `json:"storageClasses,omitempty"`
}

// On reports whether the CSI driver is rendered (the default).
func (c CSI) On() bool { return c.Enabled == nil || *c.Enabled }

// StorageClass is one tenant StorageClass backed by a PVE storage.
type StorageClass struct {
	Name          string `json:"name"`
	Storage       string `json:"storage"`
	FSType        string `json:"fstype,omitempty"`
	SSD           bool   `json:"ssd,omitempty"`
	ReclaimPolicy string `json:"reclaimPolicy,omitempty"`
}

// KubernetesNodes is a worker pool (apps.cozystack.io/v1alpha1, kind
// KubernetesNodes) named <cluster>-<pool>.
type KubernetesNodes struct {
	Name      string
	Namespace string
	Spec      NodesSpec
}

// NodesSpec is the proxmox-relevant part of KubernetesNodes.spec. Fields
// that only the kubevirt substrate takes are read so they can be refused.
type NodesSpec struct {
	Cluster              string          `json:"cluster,omitempty"`
	Substrate            string          `json:"substrate,omitempty"`
	Version              string          `json:"version,omitempty"`
	Replicas             *int32          `json:"replicas,omitempty"`
	MinReplicas          *int32          `json:"minReplicas,omitempty"`
	MaxReplicas          *int32          `json:"maxReplicas,omitempty"`
	InstanceType         string          `json:"instanceType,omitempty"`
	Resources            Resources       `json:"resources,omitempty"`
	DiskSize             *Quantity       `json:"diskSize,omitempty"`
	EphemeralStorage     *Quantity       `json:"ephemeralStorage,omitempty"`
	StorageClass         string          `json:"storageClass,omitempty"`
	Roles                []string        `json:"roles,omitempty"`
	GPUs                 []GPU           `json:"gpus,omitempty"`
	LogSerialConsole     bool            `json:"logSerialConsole,omitempty"`
	PodCPULimit          *Quantity       `json:"podCpuLimit,omitempty"`
	PodCPURequest        *Quantity       `json:"podCpuRequest,omitempty"`
	OSImage              json.RawMessage `json:"osImage,omitempty"`
	MaxUnhealthy         *Quantity       `json:"maxUnhealthy,omitempty"`
	NodeStartupTimeout   string          `json:"nodeStartupTimeout,omitempty"`
	ReadyUnknownTimeout  string          `json:"readyUnknownTimeout,omitempty"`
	ReadyFalseTimeout    string          `json:"readyFalseTimeout,omitempty"`
	MaxNodeProvisionTime string          `json:"maxNodeProvisionTime,omitempty"`
	Talos                Talos           `json:"talos,omitempty"`
	Proxmox              NodesProxmox    `json:"proxmox,omitempty"`
	// Kubelet holds the kubelet's reservations (the chart's kubelet).
	Kubelet Kubelet `json:"kubelet,omitempty"`
	// Images overrides the images of the pool's helper Jobs.
	Images NodesImages `json:"images,omitempty"`
}

// NodesImages is KubernetesNodes.spec.images.
type NodesImages struct {
	// Kubectl is the image of the pool's Jobs that run kubectl (on the
	// proxmox substrate, the host-entries Job); empty keeps the default.
	Kubectl string `json:"kubectl,omitempty"`
}

// Resources sizes each worker VM.
type Resources struct {
	CPU    *Quantity `json:"cpu,omitempty"`
	Memory *Quantity `json:"memory,omitempty"`
}

// Talos names the worker OS release the installer targets.
type Talos struct {
	Version             string `json:"version,omitempty"`
	SchematicID         string `json:"schematicID,omitempty"`
	InstallerRepository string `json:"installerRepository,omitempty"`
	// ImageFactoryURL is the Image Factory the pool's Talos comes from;
	// without installerRepository the installer is <its host>/installer.
	ImageFactoryURL string `json:"imageFactoryURL,omitempty"`
	// RegistryMirrors become the workers' machine.registries.mirrors.
	RegistryMirrors map[string]RegistryMirror `json:"registryMirrors,omitempty"`
}

// RegistryMirror is one Talos registry mirror (machine.registries.mirrors
// of the Talos machine config).
type RegistryMirror struct {
	// Endpoints are the mirror's URLs, tried in order.
	Endpoints []string `json:"endpoints"`
	// OverridePath uses each endpoint's path as given, without /v2.
	OverridePath *bool `json:"overridePath,omitempty"`
	// SkipFallback stops Talos falling back to the upstream registry.
	SkipFallback *bool `json:"skipFallback,omitempty"`
}

// NodesProxmox is KubernetesNodes.spec.proxmox.
type NodesProxmox struct {
	TemplateTags       []string            `json:"templateTags,omitempty"`
	Full               bool                `json:"full,omitempty"`
	Network            NodeNetwork         `json:"network,omitempty"`
	AdditionalNetworks []AdditionalNetwork `json:"additionalNetworks,omitempty"`
	Storage            string              `json:"storage,omitempty"`
	Pool               string              `json:"pool,omitempty"`
	DNSServers         []string            `json:"dnsServers,omitempty"`
	// TemplateDiskSize is the size of the template's boot disk (scsi0),
	// as `pxsubstrate template select` reads it from the Proxmox API.
	TemplateDiskSize *Quantity `json:"templateDiskSize,omitempty"`
	// AllowedNodes narrows the cluster's proxmox.allowedNodes for this pool.
	AllowedNodes []string `json:"allowedNodes,omitempty"`
	// LocalTemplates says that each of the pool's nodes (AllowedNodes,
	// else the cluster's) holds its own template on its local storage,
	// tagged with TemplateTags and the node's tag (capmox.NodeTag): the
	// pool renders one MachineDeployment per node, pinned to the node
	// and selecting its template.
	LocalTemplates bool `json:"localTemplates,omitempty"`
	// HA puts the pool's worker VMs under Proxmox VE HA, kept on
	// different nodes (the proxmox-network controller's pool HA, with its
	// pre-terminate hook on every Machine).
	HA bool `json:"ha,omitempty"`
	// Heal lets the proxmox-network controller heal the pool of capmox's
	// known faults (package poolheal): the label poolheal.Label on the
	// MachineDeployment.
	Heal bool `json:"heal,omitempty"`
	// FailureDomains spreads the pool evenly over named sets of Proxmox
	// VE nodes, with a MachineDeployment per domain; the proxmox-network
	// controller keeps it spread when a domain is lost and comes back.
	FailureDomains []FailureDomain `json:"failureDomains,omitempty"`
}

// NodeNetwork is net0: a raw bridge (and optional VLAN and MTU), or a VPC subnet.
type NodeNetwork struct {
	Bridge string `json:"bridge,omitempty"`
	VLAN   *int   `json:"vlan,omitempty"`
	MTU    *int   `json:"mtu,omitempty"`
	VPC    string `json:"vpc,omitempty"`
	Subnet string `json:"subnet,omitempty"`
}

// AdditionalNetwork is an extra NIC on a Proxmox-backed VPC subnet.
type AdditionalNetwork struct {
	Name   string `json:"name"`
	VPC    string `json:"vpc,omitempty"`
	Subnet string `json:"subnet,omitempty"`
	MTU    *int   `json:"mtu,omitempty"`
}

// Quantity keeps a YAML scalar (number or string) as written, so that 2,
// "2", 500m and 50% reach the parsers unchanged.
type Quantity string

// UnmarshalJSON accepts a JSON number or string, and refuses a bool, a
// list or a map by its kind, never echoing it.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*q = Quantity(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("want a quantity, a number or a string such as 4Gi; got %s", jsonKind(b))
	}
	*q = Quantity(n.String())
	return nil
}

// jsonKind names the kind of a JSON value that is neither a number nor a
// string.
func jsonKind(b []byte) string {
	switch {
	case len(b) == 0:
		return "nothing"
	case b[0] == 't' || b[0] == 'f':
		return "a bool"
	case b[0] == '[':
		return "a list"
	case b[0] == '{':
		return "a map"
	case b[0] == 'n':
		return "null"
	}
	return "a value that is not JSON"
}

type appObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec json.RawMessage `json:"spec"`
}

// ParseKubernetes reads one Kubernetes object from YAML or JSON.
func ParseKubernetes(data []byte) (Kubernetes, error) {
	obj, err := parseApp(data, "Kubernetes")
	if err != nil {
		return Kubernetes{}, err
	}
	k := Kubernetes{Name: obj.Metadata.Name, Namespace: obj.Metadata.Namespace}
	if err := decodeSpec(obj.Spec, &k.Spec); err != nil {
		return Kubernetes{}, errorf("cannot read Kubernetes %q: %w", k.Name, err)
	}
	if err := strictProxmox(obj.Spec); err != nil {
		return Kubernetes{}, errorf("cannot read Kubernetes %q: %w", k.Name, err)
	}
	return k, nil
}

// strictProxmox refuses a field of a Kubernetes object's spec.proxmox that
// ClusterProxmox does not declare, by its path, as KubernetesNodes refuses
// one of its spec: spec.proxmox is the substrate's own, and a misspelt
// field there (capmox.credentialsSecretNme, csi.enabeld) would otherwise
// fall back to a default without a word. The rest of the Kubernetes spec
// belongs to the chart and stays open.
func strictProxmox(spec json.RawMessage) error {
	if len(spec) == 0 || string(spec) == "null" {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(spec, &fields); err != nil {
		return nil // decodeSpec has refused what is not an object
	}
	raw, ok := fields["proxmox"]
	if !ok || string(raw) == "null" {
		return nil
	}
	err := strictyaml.UnmarshalJSON(raw, &ClusterProxmox{})
	if fields := strictyaml.FieldErrors(err); len(fields) > 0 {
		for _, f := range fields {
			f.Path = "proxmox." + f.Path
		}
		return fmt.Errorf("%w: %s", ErrInput, strictMessage("Kubernetes", fields))
	}
	return nil
}

// ParseKubernetesNodes reads one KubernetesNodes object from YAML or JSON.
func ParseKubernetesNodes(data []byte) (KubernetesNodes, error) {
	obj, err := parseApp(data, "KubernetesNodes")
	if err != nil {
		return KubernetesNodes{}, err
	}
	n := KubernetesNodes{Name: obj.Metadata.Name, Namespace: obj.Metadata.Namespace}
	if err := decodeSpecStrict(obj.Spec, &n.Spec); err != nil {
		return KubernetesNodes{}, errorf("cannot read KubernetesNodes %q: %w", n.Name, err)
	}
	return n, nil
}

func parseApp(data []byte, kind string) (appObject, error) {
	var obj appObject
	if err := strictyaml.UnmarshalOpen(data, &obj); err != nil {
		return obj, fmt.Errorf("cannot read %s: %w: %w", kind, ErrInput, err)
	}
	switch {
	case obj.Kind != kind:
		return obj, errorf("cannot read %s: %w: the document is kind %q; give a %s object (%s)", kind, ErrInput, obj.Kind, kind, AppsAPIVersion)
	case obj.APIVersion != AppsAPIVersion:
		return obj, errorf("cannot read %s: %w: apiVersion is %q, want %s", kind, ErrInput, obj.APIVersion, AppsAPIVersion)
	case obj.Metadata.Name == "":
		return obj, fmt.Errorf("cannot read %s: %w: metadata.name is empty", kind, ErrInput)
	case obj.Metadata.Namespace == "":
		return obj, errorf("cannot read %s %q: %w: metadata.namespace is empty; the objects are rendered into the tenant namespace, so name it", kind, obj.Metadata.Name, ErrInput)
	}
	return obj, nil
}

// decodeSpecStrict is decodeSpec that refuses a field the type does not
// declare (in another case than declared, too) or that is given twice,
// naming its path (spec.proxmox.foo): such a field would otherwise be
// dropped without a word.
func decodeSpecStrict(raw json.RawMessage, into any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	err := strictyaml.UnmarshalJSON(raw, into)
	if fields := strictyaml.FieldErrors(err); len(fields) > 0 {
		return fmt.Errorf("%w: %s", ErrInput, strictMessage("KubernetesNodes", fields))
	}
	return specError(err)
}

// specError places a decoding error in the spec: a value its type refused
// by its path (spec.diskSize: ...), others under "spec:".
func specError(err error) error {
	var ve *strictyaml.ValueError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ve):
		return fmt.Errorf("%w: spec.%s: %w", ErrInput, ve.Path, ve.Err)
	}
	return fmt.Errorf("%w: spec: %w", ErrInput, err)
}

// strictMessage names each refused field of a kind's spec with its spec
// path, on one line.
func strictMessage(kind string, fields []*strictyaml.FieldError) string {
	parts := make([]string, 0, len(fields))
	for _, f := range fields {
		m := "duplicate field spec." + termsafe.Cut(f.Path) + ": give it once"
		if !f.Duplicate {
			m = "unknown field spec." + termsafe.Cut(f.Path) + ": " + kind + " has no such field on the proxmox substrate; remove it or fix its spelling"
			if f.Suggestion != "" {
				m += fmt.Sprintf(" (did you mean %q?)", f.Suggestion)
			}
		}
		parts = append(parts, m)
	}
	return strings.Join(parts, "; ")
}

// decodeSpec reads the fields the type declares and leaves the others to
// the chart; a key that is a declared field in another case, or a key given
// twice, is refused, as it would take the field's place or be dropped
// beside it.
func decodeSpec(raw json.RawMessage, into any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return specError(strictyaml.UnmarshalOpenJSON(raw, into))
}
