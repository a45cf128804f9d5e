package kubeovn

import (
	"context"
	"fmt"
	"os/exec"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/ovngateway/kubegateway"
	"github.com/pxsubstrate/pxsubstrate/testproc"
)

// Node is a node of the cluster as Kube-OVN's controller sees it.
type Node struct {
	// Name is the Node's name and its chassis' hostname.
	Name string
	// IP is its InternalIP and its chassis' geneve tunnel address.
	IP string
	// Chassis is the system-id its ovn-controller registers with.
	Chassis string
	// ProviderNetworks are the provider networks whose trunk is up on it.
	ProviderNetworks []string
	// OwnChassis says the node's own ovn-controller runs and registers the
	// Chassis (external_ids system-id Chassis and hostname Name, e.g. a
	// chassis of internal/testenv/ovnlab): AddNode then writes no southbound row
	// and RemoveNode deletes none.
	OwnChassis bool
}

// AddNode does what a node joining a Kube-OVN cluster does outside
// kube-ovn-controller: its ovn-controller registers its Chassis (with a
// geneve encapsulation) in the southbound database, the kubelet creates
// the Node with its InternalIP and reports it Ready, and kube-ovn-cni
// annotates it with the chassis and labels it ready for each provider
// network whose bridge it set up (<pn>.provider-network.kubernetes.io/ready).
// kube-ovn-controller then allocates the node's join address and port.
// A node with OwnChassis has its Chassis written by its ovn-controller.
func (k *KubeOVN) AddNode(ctx context.Context, c client.Client, n Node) error {
	if !n.OwnChassis {
		if err := k.sbctl("chassis-add", n.Chassis, "geneve", n.IP); err != nil {
			return err
		}
		if err := k.sbctl("set", "chassis", n.Chassis, "hostname="+n.Name); err != nil {
			return err
		}
	}
	labels := map[string]string{"kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux"}
	for _, pn := range n.ProviderNetworks {
		labels[kubegateway.ReadyLabel(pn)] = "true"
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: n.Name, Labels: labels, Annotations: map[string]string{kubegateway.ChassisAnnotation: n.Chassis},
	}}
	if err := c.Create(ctx, node); err != nil {
		return err
	}
	// A merge patch without the resource version: kube-ovn-controller may
	// have annotated the Node meanwhile.
	created := node.DeepCopy()
	node.Status = corev1.NodeStatus{
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.IP}, {Type: corev1.NodeHostName, Address: n.Name}},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
	}
	return c.Status().Patch(ctx, node, client.MergeFrom(created))
}

// RemoveNode deletes the Node and, as the node's ovn-controller does when
// it stops for good, its Chassis (unless the node has OwnChassis).
func (k *KubeOVN) RemoveNode(ctx context.Context, c client.Client, n Node) error {
	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}); err != nil {
		return err
	}
	if n.OwnChassis {
		return nil
	}
	return k.sbctl("--if-exists", "chassis-del", n.Chassis)
}

// sbctl runs ovn-sbctl against the southbound database.
func (k *KubeOVN) sbctl(args ...string) error {
	sbctl, err := testproc.Find("ovn-sbctl")
	if err != nil {
		return err
	}
	out, err := exec.Command(sbctl, append([]string{"--db=" + k.SB.Unix}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ovn-sbctl %v: %w: %s", args, err, out)
	}
	return nil
}
