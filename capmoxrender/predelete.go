package capmoxrender

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PreDelete says whether RenderCluster prints the Job that frees the
// tenant's Proxmox volumes before the cluster is deleted.
type PreDelete string

const (
	// PreDeleteOmit leaves the Job out (the default): the output is meant
	// for kubectl apply, which would run a Job at once.
	PreDeleteOmit PreDelete = ""
	// PreDeleteInclude adds the Job to the cluster's objects with the
	// Helm pre-delete hook annotations, for a chart that packages them:
	// Helm creates it only when the release is uninstalled.
	PreDeleteInclude PreDelete = "include"
	// PreDeleteOnly prints the Job alone, to apply and wait for just
	// before deleting a cluster with kubectl.
	PreDeleteOnly PreDelete = "only"
)

// ParsePreDelete reads omit, include or only.
func ParsePreDelete(s string) (PreDelete, error) {
	switch s {
	case "", "omit":
		return PreDeleteOmit, nil
	case string(PreDeleteInclude), string(PreDeleteOnly):
		return PreDelete(s), nil
	}
	return "", errorf("pre-delete %q: %w: use omit, include or only", s, ErrInput)
}

// The pre-delete Job's Helm hook annotations: it runs before any object of
// the release is deleted (the CSI controller and the tenant's node plugin
// included), before hooks of a higher weight, and is recreated on each run.
const (
	AnnotationHelmHook             = "helm.sh/hook"
	AnnotationHelmHookWeight       = "helm.sh/hook-weight"
	AnnotationHelmHookDeletePolicy = "helm.sh/hook-delete-policy"
	PreDeleteHookWeight            = "-10"
	// ProxmoxCSIDriver is the CSI driver name of the Proxmox CSI plugin.
	ProxmoxCSIDriver = "csi.proxmox.sinextra.dev"
)

// PreDeleteJobName names a cluster's pre-delete Job: <release>-free-volumes.
func PreDeleteJobName(release string) string { return release + "-free-volumes" }

// freeVolumesScript runs against the tenant API with its admin kubeconfig.
// It deletes every PersistentVolumeClaim (without waiting), then every Pod
// that mounts one: the pvc-protection finalizer keeps a claim while a Pod
// uses it, so only then does the claim go and the CSI controller delete
// its Proxmox disk. Claims are matched in shell, per namespace, because a
// JSONPath filter on the claim name fails on a Pod that mounts two claims.
// It then waits, at most WAIT_STEPS times WAIT_SECONDS, for the Proxmox
// CSI PersistentVolumes whose reclaim policy is Delete to go. A tenant
// API that does not answer, or volumes still there after the wait, end
// it with a warning and success, so the cluster's deletion is not blocked;
// the volumes left are what the Proxmox-side audit names.
const freeVolumesScript = `set -eu
k() { kubectl --request-timeout=30s "$@"; }
if ! claims="$(k get pvc -A -o jsonpath='{range .items[*]}{.metadata.namespace}{"/"}{.metadata.name}{"|"}{end}')"; then
  echo "WARNING: cannot list the PersistentVolumeClaims of the tenant $CLUSTER: its Proxmox volumes are not freed; list them on the Proxmox side" >&2
  exit 0
fi
if [ -z "$claims" ]; then
  echo "the tenant $CLUSTER has no PersistentVolumeClaim"
  exit 0
fi
claims="|$claims"
k delete pvc --all --all-namespaces --wait=false
k get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{.metadata.name}{range .spec.volumes[*]}{" "}{.persistentVolumeClaim.claimName}{end}{"\n"}{end}' > /tmp/pods
while read -r ns pod mounted; do
  for c in $mounted; do
    case "$claims" in
      *"|$ns/$c|"*)
        echo "deleting Pod $ns/$pod: it holds claim $c"
        k -n "$ns" delete pod "$pod" --wait=false
        break ;;
    esac
  done
done < /tmp/pods
i=0
left=""
while [ "$i" -lt "$WAIT_STEPS" ]; do
  left=""
  k get pv -o jsonpath='{range .items[*]}{.spec.csi.driver}{" "}{.spec.persistentVolumeReclaimPolicy}{" "}{.metadata.name}{"\n"}{end}' > /tmp/pvs
  while read -r driver policy name; do
    if [ "$driver" = "$CSI_DRIVER" ] && [ "$policy" = "Delete" ]; then
      left="$left $name"
    fi
  done < /tmp/pvs
  if [ -z "$left" ]; then
    echo "every Proxmox volume of the tenant $CLUSTER is freed"
    exit 0
  fi
  i=$((i + 1))
  sleep "$WAIT_SECONDS"
done
echo "WARNING: PersistentVolumes still present in the tenant $CLUSTER:$left; their Proxmox disks may be left behind" >&2
`

// renderPreDelete renders the Job that frees the tenant's Proxmox volumes
// before the cluster goes, when the cluster runs the CSI driver.
func renderPreDelete(p clusterPlan, o Options) ([]*unstructured.Unstructured, error) {
	if !p.csi || o.PreDelete == PreDeleteOmit {
		return nil, nil
	}
	env := []corev1.EnvVar{
		{Name: "KUBECONFIG", Value: TenantKubeconfig},
		{Name: "CLUSTER", Value: p.ns + "/" + p.release},
		{Name: "CSI_DRIVER", Value: ProxmoxCSIDriver},
		{Name: "WAIT_STEPS", Value: strconv.Itoa(60)},
		{Name: "WAIT_SECONDS", Value: "10"},
		{Name: "HOME", Value: "/tmp"},
	}
	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: PreDeleteJobName(p.release), Namespace: p.ns,
			Labels: map[string]string{LabelClusterName: p.release},
			Annotations: map[string]string{
				AnnotationHelmHook:             "pre-delete",
				AnnotationHelmHookWeight:       PreDeleteHookWeight,
				AnnotationHelmHookDeletePolicy: "before-hook-creation,hook-succeeded",
			}},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr(int32(2)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelAllowToAPIServer: "true"}},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr(false),
					RestartPolicy:                corev1.RestartPolicyNever,
					SecurityContext:              restrictedPodSecurity(),
					Containers: []corev1.Container{{
						Name:            "free-volumes",
						Image:           o.Images.Kubectl,
						Command:         []string{"/bin/sh", "-c", freeVolumesScript},
						Env:             env,
						SecurityContext: restrictedContainerSecurity(),
						VolumeMounts:    []corev1.VolumeMount{mountKubeconfig, {Name: "tmp", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{
						kubeconfigVolume(p.release),
						memoryVolume("tmp"),
					},
				},
			},
		},
	}
	u, err := typed(job)
	if err != nil {
		return nil, err
	}
	return []*unstructured.Unstructured{u}, nil
}
