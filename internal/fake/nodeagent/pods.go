package nodeagent

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/retry"
)

// What the agent does for the Pods the scheduler places on its Node and
// for their CSI volumes is what the kubelet, and on its behalf the Proxmox
// CSI node plugin of the tenant's DaemonSet, do there; it runs no
// container and mounts nothing:
//
//   - the CSI node plugin's registration: once the CCM has written the
//     Node's topology.kubernetes.io/region and zone labels (the node
//     plugin v0.18.1's NodeGetInfo fails before), the kubelet adds the
//     driver to the Node's CSINode with the node plugin's answer: node ID
//     the Node's name (a VM whose SMBIOS serial names no "i=<vmid>", as
//     capmox's clones), the region and zone as topology keys, at most 24
//     volumes;
//   - a Pod's volumes: its claims' volumes are reported in
//     status.volumesInUse (the attach-detach controller attaches them;
//     the kubelet's volume manager waits for status.volumesAttached), and
//     the Pod runs, Ready, once all are attached;
//   - a Pod being deleted: its volumes leave volumesInUse (unmounted) and
//     the Pod is deleted for good, as the kubelet does once its containers
//     are gone.

// CSIDriver is the Proxmox CSI driver's name.
const CSIDriver = "csi.proxmox.sinextra.dev"

// csiMaxVolumes is the node plugin's DefaultMaxVolumesPerNode.
const csiMaxVolumes = 24

// SyncPods does one round of the kubelet's work for the Node's Pods and
// CSI volumes.
func (a *Agent) SyncPods(ctx context.Context) error {
	node, err := a.nodes.Get(ctx, a.Name(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := a.registerCSI(ctx, node); err != nil {
		return err
	}
	pods, err := a.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", a.Name()).String()})
	if err != nil {
		return err
	}
	var inUse []corev1.UniqueVolumeName
	var gone []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			gone = append(gone, p)
			continue
		}
		vols, err := a.podVolumes(ctx, &p)
		if err != nil {
			return err
		}
		inUse = append(inUse, vols...)
		if err := a.runPod(ctx, node, &p, vols); err != nil {
			return err
		}
	}
	slices.Sort(inUse)
	inUse = slices.Compact(inUse)
	if err := a.setVolumesInUse(ctx, node, inUse); err != nil {
		return err
	}
	for _, p := range gone {
		// unmounted: its volumes left volumesInUse above
		err := a.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64),
			Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// registerCSI adds the driver to the Node's CSINode once the Node has its
// topology labels.
func (a *Agent) registerCSI(ctx context.Context, node *corev1.Node) error {
	a.mu.Lock()
	done := a.csiNode == node.UID
	a.mu.Unlock()
	if done {
		return nil
	}
	region, zone := node.Labels[corev1.LabelTopologyRegion], node.Labels[corev1.LabelTopologyZone]
	csiNodes := a.cs.StorageV1().CSINodes()
	cn, err := csiNodes.Get(ctx, node.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cn = &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node.Name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}}}
		cn, err = csiNodes.Create(ctx, cn, metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	if region == "" || zone == "" {
		return nil
	}
	if !slices.ContainsFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == CSIDriver }) {
		n := int32(csiMaxVolumes)
		cn.Spec.Drivers = append(cn.Spec.Drivers, storagev1.CSINodeDriver{Name: CSIDriver, NodeID: node.Name,
			TopologyKeys: []string{corev1.LabelTopologyRegion, corev1.LabelTopologyZone}, Allocatable: &storagev1.VolumeNodeResources{Count: &n}})
		if _, err := csiNodes.Update(ctx, cn, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	a.mu.Lock()
	a.csiNode = node.UID
	a.mu.Unlock()
	return nil
}

// podVolumes are the unique names of the CSI volumes of the Pod's bound
// claims, as the attach-detach controller names them.
func (a *Agent) podVolumes(ctx context.Context, p *corev1.Pod) ([]corev1.UniqueVolumeName, error) {
	var out []corev1.UniqueVolumeName
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc, err := a.cs.CoreV1().PersistentVolumeClaims(p.Namespace).Get(ctx, v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && pvc.Spec.VolumeName == "" {
			continue
		}
		if err != nil {
			return nil, err
		}
		pv, err := a.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if pv.Spec.CSI != nil {
			out = append(out, corev1.UniqueVolumeName(fmt.Sprintf("kubernetes.io/csi/%s^%s", pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)))
		}
	}
	return out, nil
}

// runPod marks the Pod running and ready once each of its claims is bound
// and attached (a Pod without claims at once).
func (a *Agent) runPod(ctx context.Context, node *corev1.Node, p *corev1.Pod, vols []corev1.UniqueVolumeName) error {
	claims := 0
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims++
		}
	}
	if len(vols) < claims || p.Status.Phase == corev1.PodRunning {
		return nil
	}
	for _, v := range vols {
		if !slices.ContainsFunc(node.Status.VolumesAttached, func(av corev1.AttachedVolume) bool { return av.Name == v }) {
			return nil
		}
	}
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	_, err := a.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// setVolumesInUse writes the Node's status.volumesInUse, unless node (as
// read this round) already holds vols.
func (a *Agent) setVolumesInUse(ctx context.Context, node *corev1.Node, vols []corev1.UniqueVolumeName) error {
	if slices.Equal(node.Status.VolumesInUse, vols) {
		return nil
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := a.nodes.Get(ctx, a.Name(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if slices.Equal(n.Status.VolumesInUse, vols) {
			return nil
		}
		n.Status.VolumesInUse = vols
		_, err = a.nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}
