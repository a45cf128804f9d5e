package verify

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	pmv1alpha1 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha1"
	pmv1alpha2 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha2"
	"github.com/pxsubstrate/pxsubstrate/api/v1alpha1"
	"github.com/pxsubstrate/pxsubstrate/poolheal"
)

// proxmoxMachineOf reads a ProxmoxMachine of either capmox generation.
func proxmoxMachineOf(u unstructured.Unstructured) (ProxmoxMachine, error) {
	pm := ProxmoxMachine{Name: u.GetName(), Machine: u.GetName()}
	if u.GroupVersionKind().Version == "v1alpha1" {
		var m pmv1alpha1.ProxmoxMachine
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &m); err != nil {
			return pm, err
		}
		pm.VMID, pm.ProxmoxNode, pm.Pool = deref(m.Spec.VirtualMachineID), deref(m.Status.ProxmoxNode), m.Spec.Pool
		if m.Spec.Disks != nil && m.Spec.Disks.BootVolume != nil {
			pm.BootVolumeGiB = m.Spec.Disks.BootVolume.SizeGB
		}
	} else {
		var m pmv1alpha2.ProxmoxMachine
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &m); err != nil {
			return pm, err
		}
		pm.VMID, pm.ProxmoxNode, pm.Pool = deref(m.Spec.VirtualMachineID), deref(m.Status.ProxmoxNode), deref(m.Spec.Pool)
		if m.Spec.Disks != nil && m.Spec.Disks.BootVolume != nil {
			pm.BootVolumeGiB = m.Spec.Disks.BootVolume.SizeGB
		}
	}
	provisioned, _, _ := unstructured.NestedBool(u.Object, "status", "initialization", "provisioned")
	ready, _, _ := unstructured.NestedBool(u.Object, "status", "ready")
	pm.Provisioned = provisioned || ready
	pm.Deleting = u.GetDeletionTimestamp() != nil
	_, pm.StoppedOnPurpose = u.GetAnnotations()[poolheal.StoppedAnnotation]
	for _, o := range u.GetOwnerReferences() {
		if o.Kind == "Machine" {
			pm.Machine = o.Name
		}
	}
	return pm, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// failoverCondition is the network's GatewayFailover condition, or nil.
func failoverCondition(n unstructured.Unstructured) (*metav1.Condition, error) {
	raw, _, err := unstructured.NestedSlice(n.Object, "status", "conditions")
	if err != nil {
		return nil, fmt.Errorf("status.conditions: %w", err)
	}
	for _, r := range raw {
		obj, ok := r.(map[string]any)
		if !ok || obj["type"] != v1alpha1.ConditionGatewayFailover {
			continue
		}
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &c); err != nil {
			return nil, fmt.Errorf("status.conditions[%s]: %w", v1alpha1.ConditionGatewayFailover, err)
		}
		return &c, nil
	}
	return nil, nil
}
