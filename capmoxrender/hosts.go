package capmoxrender

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// A worker VM resolves through the pool's dnsServers, which know nothing of
// the management cluster's Service names, so the control plane endpoint
// https://<release>.<ns>.svc:6443 must be mapped to the control plane
// Service's LoadBalancer address in the worker's own hosts table:
// machine.network.extraHostEntries.
const (
	// HostEntriesPath is the Talos machine config path of the host entries.
	HostEntriesPath = capmox.HostEntriesPath
	// HostEntriesPatchIndex is the index of the extraHostEntries patch in
	// the TalosConfigTemplate's configPatches, which the Job replaces.
	HostEntriesPatchIndex = 4
	// TalosGroup is the API group of the Talos bootstrap provider.
	TalosGroup = "bootstrap.cluster.x-k8s.io"
	// TalosConfigTemplateResource is the resource the Job patches.
	TalosConfigTemplateResource = "talosconfigtemplates"
)

// HostEntry is one machine.network.extraHostEntries item.
type HostEntry struct {
	IP      string   `json:"ip"`
	Aliases []string `json:"aliases"`
}

// ControlPlaneHost is the name the workers' endpoint uses:
// <release>.<namespace>.svc, the control plane Service.
func ControlPlaneHost(release, namespace string) string {
	return release + "." + namespace + ".svc"
}

// HostEntriesName names the ServiceAccount, Role and RoleBinding of a pool's
// host-entries Job: kubernetes-<cluster>-<pool>-hosts.
func HostEntriesName(release, group string) string { return release + "-" + group + "-hosts" }

// planHostAddress reads the control plane Service's LoadBalancer address
// through Options.Clusters; "" when it is not known (no lookup, no Service,
// or no address yet), and the Job fills it in at run time.
func planHostAddress(ctx context.Context, o Options, p *nodesPlan) error {
	if o.Clusters == nil {
		return nil
	}
	addr, found, err := o.Clusters.LoadBalancerAddress(ctx, p.ns, p.release)
	if err != nil {
		return fmt.Errorf("cannot look up Service %s/%s: %w: %w", p.ns, p.release, ErrLookup, err)
	}
	if !found || addr == "" {
		return nil
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return refuse("lookup", "Service %s/%s has LoadBalancer address %q, which is not an IP address: Talos host entries map a name to an IP", p.ns, p.release, addr)
	}
	p.controlPlaneIP = a.String()
	return nil
}

// hostEntries is the value of the extraHostEntries patch: the known
// address, or an empty list for the Job to fill.
func hostEntries(p nodesPlan) []HostEntry {
	if p.controlPlaneIP == "" {
		return []HostEntry{}
	}
	return []HostEntry{{IP: p.controlPlaneIP, Aliases: []string{ControlPlaneHost(p.release, p.ns)}}}
}

// hostEntriesScript waits for the Service's LoadBalancer address, checks
// that it is an IPv4 or IPv6 address, and replaces the extraHostEntries
// patch of the TalosConfigTemplate, after a JSON-patch test that the entry
// at that index is the host-entries patch. Everything it reads comes from
// the environment; nothing is interpolated into the script.
const hostEntriesScript = `set -eu
ip=""
i=0
while [ "$i" -lt "$WAIT_STEPS" ]; do
  ip="$(kubectl -n "$NAMESPACE" get service "$SVC_NAME" -o jsonpath='{.status.loadBalancer.ingress[0].ip}')"
  [ -n "$ip" ] && break
  i=$((i + 1))
  sleep "$WAIT_SECONDS"
done
if [ -z "$ip" ]; then
  echo "Service $NAMESPACE/$SVC_NAME has no LoadBalancer address: the workers cannot reach $SVC_HOST; check the LoadBalancer provider of the management cluster" >&2
  exit 1
fi
case "$ip" in
  *[!0-9a-fA-F.:]*) echo "Service $NAMESPACE/$SVC_NAME has LoadBalancer address '$ip', which is not an IP address" >&2; exit 1 ;;
esac
SVC_IP="$ip"
kubectl -n "$NAMESPACE" patch talosconfigtemplate "$TCT_NAME" --type=json -p "[{\"op\":\"test\",\"path\":\"/spec/template/spec/configPatches/$PATCH_INDEX/path\",\"value\":\"$HOST_ENTRIES_PATH\"},{\"op\":\"replace\",\"path\":\"/spec/template/spec/configPatches/$PATCH_INDEX/value\",\"value\":[{\"ip\":\"$SVC_IP\",\"aliases\":[\"$SVC_HOST\"]}]}]"
echo "TalosConfigTemplate $NAMESPACE/$TCT_NAME maps $SVC_HOST to $SVC_IP"
`

// renderHostEntries renders, when the address is not known at render time,
// the Job that fills it in and the least privilege it needs: get on the one
// Service, get and patch on the one TalosConfigTemplate. The Job is named
// after the TalosConfigTemplate, so a new template gets a new Job.
func renderHostEntries(p nodesPlan, o Options, tct string) ([]*unstructured.Unstructured, error) {
	if p.controlPlaneIP != "" {
		return nil, nil
	}
	name := HostEntriesName(p.release, p.group)
	labels := poolLabels(p)
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.ns, Labels: labels},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"services"}, ResourceNames: []string{p.release}, Verbs: []string{"get"}},
			{APIGroups: []string{TalosGroup}, Resources: []string{TalosConfigTemplateResource}, ResourceNames: []string{tct}, Verbs: []string{"get", "patch"}},
		},
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.ns, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: p.ns}},
	}
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.ns, Labels: labels},
	}
	out := make([]*unstructured.Unstructured, 0, 4)
	for _, obj := range []any{sa, role, binding, hostEntriesJob(p, o, tct, name)} {
		u, err := typed(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func hostEntriesJob(p nodesPlan, o Options, tct, sa string) *batchv1.Job {
	env := []corev1.EnvVar{
		{Name: "NAMESPACE", Value: p.ns},
		{Name: "SVC_NAME", Value: p.release},
		{Name: "SVC_HOST", Value: ControlPlaneHost(p.release, p.ns)},
		{Name: "TCT_NAME", Value: tct},
		{Name: "PATCH_INDEX", Value: strconv.Itoa(HostEntriesPatchIndex)},
		{Name: "HOST_ENTRIES_PATH", Value: HostEntriesPath},
		{Name: "WAIT_STEPS", Value: "180"},
		{Name: "WAIT_SECONDS", Value: "10"},
		{Name: "HOME", Value: "/tmp"},
	}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: tct, Namespace: p.ns, Labels: poolLabels(p)},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr(int32(6)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelAllowToAPIServer: "true"}},
				Spec: corev1.PodSpec{
					ServiceAccountName: sa,
					RestartPolicy:      corev1.RestartPolicyOnFailure,
					SecurityContext:    restrictedPodSecurity(),
					Containers: []corev1.Container{{
						Name:            "host-entries",
						Image:           or(p.kubectlImage, o.Images.Kubectl),
						Command:         []string{"/bin/sh", "-c", hostEntriesScript},
						Env:             env,
						SecurityContext: restrictedContainerSecurity(),
						VolumeMounts:    []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{memoryVolume("tmp")},
				},
			},
		},
	}
}
