// Package nodeagent does for a booted VM what its kubelet does in a tenant
// cluster: it registers the Node at the control-plane endpoint the VM's
// Talos configuration names, named after the VM's hostname, with its
// addresses from the VM's network-config, status.nodeInfo.systemUUID the
// VM's SMBIOS UUID (what the kubelet reads from
// /sys/class/dmi/id/product_uuid), and a Ready condition. With the
// configuration's machine.kubelet.extraArgs cloud-provider: external (what
// the render writes) the Node is registered as such a kubelet registers it:
// no spec.providerID, the taint node.cloudprovider.kubernetes.io/uninitialized
// and the annotation alpha.kubernetes.io/provided-node-ip; the Proxmox
// cloud controller manager then sets providerID proxmox://<SMBIOS UUID>, the
// topology labels and removes the taint, and Cluster API pairs the Machine
// by that providerID. While the VM runs, its Agent posts the Node's status,
// so that a VM that stops is seen, as a kubelet that stops is, by the node
// lifecycle controller.
//
// It is not a kubelet: it runs no containers, and it authenticates with the
// credentials the test gives it instead of Talos's bootstrap token. What it
// does for Pods and CSI volumes is in pods.go.
package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/pxsubstrate/pxsubstrate/internal/fake/talosboot"
)

// ProviderIDPrefix is how capmox and the Proxmox CCM spell a VM's provider
// ID: proxmox://<SMBIOS UUID>.
const ProviderIDPrefix = "proxmox://"

// What a kubelet with --cloud-provider=external writes on the Node it
// registers (k8s.io/cloud-provider/api): the taint the cloud controller
// manager removes once it has initialised the Node, and the address given
// with --node-ip, which the Proxmox CCM v0.7.0 needs before it answers.
const (
	TaintUninitialized   = "node.cloudprovider.kubernetes.io/uninitialized"
	AnnotationProvidedIP = "alpha.kubernetes.io/provided-node-ip"
	// AnnotationControllerAttach is the kubelet's default
	// enableControllerAttachDetach: the attach-detach controller of
	// kube-controller-manager attaches the Node's volumes.
	AnnotationControllerAttach = "volumes.kubernetes.io/controller-managed-attach-detach"
)

// ErrNoIdentity is a boot without the SMBIOS UUID (meta-data's
// instance-id) or a hostname.
var ErrNoIdentity = errors.New("the VM has no SMBIOS UUID or hostname to register with")

// ErrUnresolved is an endpoint host the VM cannot resolve: it is neither an
// address nor one of the configuration's extraHostEntries (the agent asks
// no DNS server).
var ErrUnresolved = errors.New("the control-plane endpoint's host does not resolve")

// Register creates the Node of b, or updates it, on the API server at b's
// control-plane endpoint: creds gives the credentials and the CA, its Host
// is replaced by the endpoint, its host name resolved as Talos resolves it
// from /etc/hosts (machine.network.extraHostEntries). A configuration
// naming another endpoint registers elsewhere, or nowhere.
func Register(ctx context.Context, b *talosboot.Boot, creds *rest.Config) (*corev1.Node, error) {
	a, err := New(b, creds)
	if err != nil {
		return nil, err
	}
	return a.Register(ctx)
}

// Agent is the kubelet of one booted VM: it registers the VM's Node and
// then posts its status, as the kubelet does every
// nodeStatusUpdateFrequency while it runs.
type Agent struct {
	// Host is the API server the agent reaches (https://<address>:<port>).
	Host  string
	boot  *talosboot.Boot
	cs    kubernetes.Interface
	nodes typedcorev1.NodeInterface

	// mu guards csiNode: the UID of the Node whose CSINode holds the
	// driver. The kubelet registers the node plugin once, when it starts,
	// not on every sync; a Node made again (another UID) registers again.
	mu      sync.Mutex
	csiNode types.UID
}

// New returns the agent of b, reaching the API server at b's control-plane
// endpoint with creds (its Host replaced by the endpoint's resolved
// address).
func New(b *talosboot.Boot, creds *rest.Config) (*Agent, error) {
	if b.Meta.InstanceID == "" || b.Hostname() == "" {
		return nil, ErrNoIdentity
	}
	addr, err := Resolve(b)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(creds)
	cfg.Host = "https://" + net.JoinHostPort(addr.String(), b.Endpoint.Port())
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Agent{Host: cfg.Host, boot: b, cs: cs, nodes: cs.CoreV1().Nodes()}, nil
}

// Name is the agent's Node name: the VM's hostname.
func (a *Agent) Name() string { return a.boot.Hostname() }

// Register creates the agent's Node, or updates it, and reports it ready.
func (a *Agent) Register(ctx context.Context) (*corev1.Node, error) {
	want := node(a.boot)
	got, err := a.nodes.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = a.nodes.Get(ctx, want.Name, metav1.GetOptions{})
		if err == nil {
			// the kubelet reconciles its own labels; the CCM's stay
			if got.Labels == nil {
				got.Labels = map[string]string{}
			}
			for k, v := range want.Labels {
				got.Labels[k] = v
			}
			got, err = a.nodes.Update(ctx, got, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot register node %s at %s: %w", want.Name, a.Host, err)
	}
	// The node lifecycle controller may taint or annotate the Node between
	// the two writes: the status is written again on a conflict, as the
	// kubelet's tryUpdateNodeStatus is retried.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := a.nodes.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status = want.Status
		got, err = a.nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cannot report node %s ready at %s: %w", want.Name, a.Host, err)
	}
	return got, nil
}

// ErrNodeGone is a heartbeat for a Node that no longer exists: the kubelet
// registers a Node once, when it starts, and does not bring back one
// deleted under it.
var ErrNodeGone = errors.New("the node is gone")

// PostStatus is one heartbeat: the Node's conditions (kubeletConditions)
// get lastHeartbeatTime now, each one's lastTransitionTime moved only
// when its status changes, as the kubelet's condition setters
// (pkg/kubelet/nodestatus/setters.go) do. The node lifecycle controller
// of kube-controller-manager reads a changed lastHeartbeatTime as a sign
// of life; without one for its grace period it sets them to Unknown.
func (a *Agent) PostStatus(ctx context.Context) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := a.nodes.Get(ctx, a.Name(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ErrNodeGone
		}
		if err != nil {
			return err
		}
		for _, want := range kubeletConditions(metav1.NewTime(time.Now())) {
			i := slices.IndexFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == want.Type })
			if i < 0 {
				n.Status.Conditions = append(n.Status.Conditions, want)
				continue
			}
			if n.Status.Conditions[i].Status == want.Status {
				want.LastTransitionTime = n.Status.Conditions[i].LastTransitionTime
			}
			n.Status.Conditions[i] = want
		}
		_, err = a.nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("cannot post the status of node %s at %s: %w", a.Name(), a.Host, err)
	}
	return nil
}

// kubeletConditions are the conditions a healthy kubelet posts, as its
// setters word them: Ready (KubeletReady), and no memory, disk or PID
// pressure. Cluster API's Machine NodeHealthy (and so a
// MachineDeployment's readyReplicas) waits for all four.
func kubeletConditions(now metav1.Time) []corev1.NodeCondition {
	c := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return []corev1.NodeCondition{
		c(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		c(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		c(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		c(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
	}
}

// ExternalCloudProvider says whether b's kubelet runs with
// --cloud-provider=external (machine.kubelet.extraArgs).
func ExternalCloudProvider(b *talosboot.Boot) bool {
	return b.Config != nil && b.Config.Machine() != nil && b.Config.Machine().Kubelet().ExtraArgs()["cloud-provider"] == "external"
}

// Capacity is what every lab Node offers the scheduler: the kubelet's
// default of 110 Pods, and the CPUs and memory of a small worker.
var Capacity = corev1.ResourceList{
	corev1.ResourcePods:   resource.MustParse("110"),
	corev1.ResourceCPU:    resource.MustParse("2"),
	corev1.ResourceMemory: resource.MustParse("4Gi"),
}

func node(b *talosboot.Boot) *corev1.Node {
	now := metav1.NewTime(time.Now())
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: b.Hostname(), Labels: map[string]string{
			corev1.LabelHostname: b.Hostname(), corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		}, Annotations: map[string]string{AnnotationControllerAttach: "true"}},
		Status: corev1.NodeStatus{
			Conditions:  kubeletConditions(now),
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: b.Hostname()}},
			NodeInfo:    corev1.NodeSystemInfo{SystemUUID: b.Meta.InstanceID, OperatingSystem: "linux", Architecture: "amd64"},
			Capacity:    Capacity.DeepCopy(),
			Allocatable: Capacity.DeepCopy(),
		},
	}
	if b.Meta.KubernetesVersion != "" {
		n.Status.NodeInfo.KubeletVersion = b.Meta.KubernetesVersion
	}
	addrs := Addresses(b.NetworkConfig)
	for _, a := range addrs {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a.String()})
	}
	if ExternalCloudProvider(b) {
		n.Spec.Taints = []corev1.Taint{{Key: TaintUninitialized, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		// As a kubelet given --node-ip with the first address of each
		// family (a dual-stack Talos node's), which the cloud node
		// controller keeps of the addresses the CCM reports.
		var ips []string
		var v4, v6 bool
		for _, a := range addrs {
			if a.Is4() && !v4 || !a.Is4() && !v6 {
				ips = append(ips, a.String())
				v4, v6 = v4 || a.Is4(), v6 || !a.Is4()
			}
		}
		if len(ips) > 0 {
			n.Annotations[AnnotationProvidedIP] = strings.Join(ips, ",")
		}
	}
	return n
}

// Resolve returns the address of b's endpoint host: the host itself when
// it is an address, else the address of the extraHostEntries entry that
// names it.
func Resolve(b *talosboot.Boot) (netip.Addr, error) {
	host := b.Endpoint.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		return a, nil
	}
	if b.Config != nil && b.Config.Machine() != nil {
		for _, h := range b.Config.Machine().Network().ExtraHosts() {
			if a, err := netip.ParseAddr(h.IP()); err == nil && slices.Contains(h.Aliases(), host) {
				return a, nil
			}
		}
	}
	return netip.Addr{}, fmt.Errorf("%w: %s is not in machine.network.extraHostEntries", ErrUnresolved, host)
}

// netplan is the part of capmox's network-config (netplan v2, under a
// top-level network key) that names each interface's static addresses.
type netplan struct {
	Network struct {
		Ethernets map[string]struct {
			Addresses []string `json:"addresses"`
		} `json:"ethernets"`
	} `json:"network"`
}

// Addresses returns the static addresses of a network-config, without
// their prefix lengths, in interface order; nil for none or a document
// that is not netplan.
func Addresses(networkConfig []byte) []netip.Addr {
	var np netplan
	if len(networkConfig) == 0 || yaml.Unmarshal(networkConfig, &np) != nil {
		return nil
	}
	var names []string
	eth := np.Network.Ethernets
	for n := range eth {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []netip.Addr
	for _, n := range names {
		for _, a := range eth[n].Addresses {
			if p, err := netip.ParsePrefix(a); err == nil {
				out = append(out, p.Addr())
			} else if ip, err := netip.ParseAddr(a); err == nil {
				out = append(out, ip)
			}
		}
	}
	return out
}
