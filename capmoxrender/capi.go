package capmoxrender

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
	pmv1alpha1 "github.com/pxsubstrate/pxsubstrate/api/capmox/v1alpha1"
)

// renderMachineDeployment leaves spec.replicas out: the autoscaler owns it,
// and CAPI seeds it from the min-size annotation on create.
func renderMachineDeployment(p nodesPlan, o Options, pmt, tct string) (*unstructured.Unstructured, error) {
	name := p.release + "-" + p.group
	surge, unavailable := intstr.FromInt32(p.maxReplicas), intstr.FromInt32(1)
	if p.gpus != nil {
		surge = intstr.FromInt32(p.gpus.surge)
	}
	if o.Capmox == CapmoxV07 {
		md := &clusterv1beta1.MachineDeployment{ObjectMeta: objectMeta(p.ns, name)}
		md.APIVersion, md.Kind = clusterv1beta1.GroupVersion.String(), "MachineDeployment"
		md.Annotations, md.Labels = mdAnnotations(p), mdLabels(p)
		md.Spec.ClusterName = p.release
		md.Spec.Replicas = fixedPoolReplicas(p)
		md.Spec.Strategy = &clusterv1beta1.MachineDeploymentStrategy{Type: clusterv1beta1.RollingUpdateMachineDeploymentStrategyType,
			RollingUpdate: &clusterv1beta1.MachineRollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}}
		md.Spec.Selector = metav1.LabelSelector{MatchLabels: poolLabels(p)}
		md.Spec.Template.Labels, md.Spec.Template.Annotations = templateLabels(p), templateAnnotations(p)
		md.Spec.Template.Spec = clusterv1beta1.MachineSpec{
			ClusterName:       p.release,
			Version:           ptr(p.version),
			Bootstrap:         clusterv1beta1.Bootstrap{ConfigRef: &corev1.ObjectReference{APIVersion: TalosAPIVersion, Kind: KindTalosConfigTmpl, Name: tct, Namespace: p.ns}},
			InfrastructureRef: corev1.ObjectReference{APIVersion: pmv1alpha1.GroupVersion.String(), Kind: capmox.KindProxmoxMachineTemplate, Name: pmt, Namespace: p.ns},
		}
		return typed(md)
	}
	md := &clusterv1.MachineDeployment{ObjectMeta: objectMeta(p.ns, name)}
	md.APIVersion, md.Kind = clusterv1.GroupVersion.String(), "MachineDeployment"
	md.Annotations, md.Labels = mdAnnotations(p), mdLabels(p)
	md.Spec.ClusterName = p.release
	md.Spec.Replicas = fixedPoolReplicas(p)
	md.Spec.Rollout.Strategy = clusterv1.MachineDeploymentRolloutStrategy{Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
		RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{MaxSurge: &surge, MaxUnavailable: &unavailable}}
	md.Spec.Selector = metav1.LabelSelector{MatchLabels: poolLabels(p)}
	md.Spec.Template.Labels, md.Spec.Template.Annotations = templateLabels(p), templateAnnotations(p)
	md.Spec.Template.Spec = clusterv1.MachineSpec{
		ClusterName:       p.release,
		Version:           p.version,
		Bootstrap:         clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{APIGroup: TalosGroup, Kind: KindTalosConfigTmpl, Name: tct}},
		InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: capmox.Group, Kind: capmox.KindProxmoxMachineTemplate, Name: pmt},
	}
	return typed(md)
}

// fixedPoolReplicas is the replicas of a fixed pool (its minimum and
// maximum are one number), nil for an autoscaled pool, whose count the
// autoscaler owns. Written out, a changed replicas scales the pool on the
// next apply: left out, Cluster API's defaulting webhook recomputes it from
// the autoscaler annotations only when the object it receives has none,
// and an apply (Helm's, or server-side) sends the stored count back, so
// the pool would keep its old size until an autoscaler moved it.
func fixedPoolReplicas(p nodesPlan) *int32 {
	if p.minReplicas != p.maxReplicas {
		return nil
	}
	return ptr(p.minReplicas)
}

func renderMachineHealthCheck(p nodesPlan, o Options) (*unstructured.Unstructured, error) {
	name := p.release + "-" + p.group
	sel := metav1.LabelSelector{MatchLabels: healthCheckSelector(p)}
	mu := p.maxUnhealthy
	if o.Capmox == CapmoxV07 {
		m := &clusterv1beta1.MachineHealthCheck{ObjectMeta: objectMeta(p.ns, name)}
		m.APIVersion, m.Kind = clusterv1beta1.GroupVersion.String(), "MachineHealthCheck"
		m.Spec = clusterv1beta1.MachineHealthCheckSpec{
			ClusterName:        p.release,
			Selector:           sel,
			MaxUnhealthy:       &mu,
			NodeStartupTimeout: &metav1.Duration{Duration: p.startup},
			UnhealthyConditions: []clusterv1beta1.UnhealthyCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Timeout: metav1.Duration{Duration: p.readyUnknown}},
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Timeout: metav1.Duration{Duration: p.readyFalse}},
			},
		}
		return typed(m)
	}
	m := &clusterv1.MachineHealthCheck{ObjectMeta: objectMeta(p.ns, name)}
	m.APIVersion, m.Kind = clusterv1.GroupVersion.String(), "MachineHealthCheck"
	m.Spec = clusterv1.MachineHealthCheckSpec{
		ClusterName: p.release,
		Selector:    sel,
		Checks: clusterv1.MachineHealthCheckChecks{
			NodeStartupTimeoutSeconds: ptr(int32(p.startup.Seconds())),
			UnhealthyNodeConditions: []clusterv1.UnhealthyNodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: ptr(int32(p.readyUnknown.Seconds()))},
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, TimeoutSeconds: ptr(int32(p.readyFalse.Seconds()))},
			},
		},
		Remediation: clusterv1.MachineHealthCheckRemediation{TriggerIf: clusterv1.MachineHealthCheckRemediationTriggerIf{UnhealthyLessThanOrEqualTo: &mu}},
	}
	return typed(m)
}
