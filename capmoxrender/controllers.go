package capmoxrender

import (
	"fmt"
	"hash/adler32"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/pxsubstrate/pxsubstrate/api/capmox"
)

// Paths and names shared by the management-side controllers.
const (
	TenantKubeconfigDir  = "/etc/kubernetes/kubeconfig"
	TenantKubeconfigKey  = "super-admin.svc"
	TenantKubeconfig     = TenantKubeconfigDir + "/" + TenantKubeconfigKey
	CredentialsDir       = "/etc/proxmox-credentials"
	CloudConfigDir       = "/etc/proxmox"
	CloudConfigFile      = CloudConfigDir + "/config.yaml"
	CredentialsVolume    = capmox.CredentialsVolume
	BuildCloudConfigName = "build-cloud-config"
	// LabelAllowToAPIServer lets the Pod reach the tenant API server.
	LabelAllowToAPIServer = "policy.cozystack.io/allow-to-apiserver"
)

// ControllerVMID is the CSI features.controllerVmID of a tenant cluster:
// 100000 + (adler32("<namespace>/<release>") mod 800000), clear of normal
// guest VMIDs and stable across a recreate under the same name.
func ControllerVMID(namespace, release string) int {
	return 100000 + int(adler32.Checksum([]byte(namespace+"/"+release))%800000)
}

// CredentialKeys are the keys the CCM and CSI credentials Secret must hold.
var CredentialKeys = []string{"url", "token_id", "token_secret", "region"}

// cloudConfigScript builds the cloud-config at Pod start from the mounted
// Secret, in a memory-backed volume with umask 077, so the token never
// appears in a rendered manifest. features is YAML for the features block.
func cloudConfigScript(secret string, insecure bool, features []string) string {
	var b strings.Builder
	b.WriteString("set -eu\numask 077\n")
	b.WriteString(`creds="${PROXMOX_CREDENTIALS_DIR:-` + CredentialsDir + `}"` + "\n")
	b.WriteString(`out="${CLOUD_CONFIG_DIR:-` + CloudConfigDir + `}"` + "\n")
	b.WriteString("for k in " + strings.Join(CredentialKeys, " ") + "; do\n")
	b.WriteString(`  if [ ! -s "$creds/$k" ]; then echo "the credentials Secret has no key '$k'; add url, token_id, token_secret and region to Secret ` + secret + `" >&2; exit 1; fi` + "\n")
	b.WriteString("done\n")
	b.WriteString(`q() { printf "'%s'" "$(sed "s/'/''/g" "$creds/$1")"; }` + "\n")
	b.WriteString("{\n  echo 'features:'\n")
	for _, f := range features {
		b.WriteString("  echo '  " + f + "'\n")
	}
	b.WriteString("  echo 'clusters:'\n")
	b.WriteString(`  echo "- url: $(q url)"` + "\n")
	fmt.Fprintf(&b, "  echo '  insecure: %t'\n", insecure)
	b.WriteString(`  echo "  token_id: $(q token_id)"` + "\n")
	b.WriteString(`  echo "  token_secret: $(q token_secret)"` + "\n")
	b.WriteString(`  echo "  region: $(q region)"` + "\n")
	b.WriteString("} > \"$out/config.yaml.tmp\"\nmv \"$out/config.yaml.tmp\" \"$out/config.yaml\"\n")
	return b.String()
}

// controllerTolerations are exactly two: a blanket Exists would keep the Pod
// on a dead Node (it also tolerates unreachable:NoExecute forever).
func controllerTolerations() []corev1.Toleration {
	return []corev1.Toleration{
		{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
		{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
}

func controllerVolumes(release, secret string) []corev1.Volume {
	return []corev1.Volume{
		kubeconfigVolume(release),
		{Name: CredentialsVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}},
		memoryVolume("cloud-config"),
	}
}

// kubeconfigVolume is the tenant's admin kubeconfig, mounted with
// mountKubeconfig.
func kubeconfigVolume(release string) corev1.Volume {
	return corev1.Volume{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: release + "-admin-kubeconfig", Items: []corev1.KeyToPath{{Key: TenantKubeconfigKey, Path: TenantKubeconfigKey}}}}}
}

// memoryVolume is an emptyDir named name, kept in memory.
func memoryVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}
}

// restrictedPodSecurity and restrictedContainerSecurity are the security
// contexts of the Jobs that run kubectl (host entries, pre-delete): an
// unprivileged user, the runtime's seccomp profile, no escalation, no
// capabilities, a read-only root.
func restrictedPodSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(65534)),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
}

func restrictedContainerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr(false),
		ReadOnlyRootFilesystem:   ptr(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

var (
	mountKubeconfig  = corev1.VolumeMount{Name: "kubeconfig", MountPath: TenantKubeconfigDir, ReadOnly: true}
	mountCloudConfig = corev1.VolumeMount{Name: "cloud-config", MountPath: CloudConfigDir, ReadOnly: true}
)

func buildCloudConfigContainer(image, secret string, insecure bool, features []string) corev1.Container {
	return corev1.Container{
		Name:    BuildCloudConfigName,
		Image:   image,
		Command: []string{"/bin/sh", "-c", cloudConfigScript(secret, insecure, features)},
		VolumeMounts: []corev1.VolumeMount{
			{Name: CredentialsVolume, MountPath: CredentialsDir, ReadOnly: true},
			{Name: "cloud-config", MountPath: CloudConfigDir},
		},
	}
}

func controllerPodSpec(sa string, init corev1.Container, containers []corev1.Container, volumes []corev1.Volume) corev1.PodSpec {
	return corev1.PodSpec{
		ServiceAccountName: sa,
		PriorityClassName:  "system-cluster-critical",
		Tolerations:        controllerTolerations(),
		InitContainers:     []corev1.Container{init},
		Containers:         containers,
		Volumes:            volumes,
	}
}

func deployment(ns, name string, labels map[string]string, pod corev1.PodSpec) *appsv1.Deployment {
	podLabels := map[string]string{LabelAllowToAPIServer: "true"}
	for k, v := range labels {
		podLabels[k] = v
	}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels}, Spec: pod},
		},
	}
	return d
}

func serviceAccount(ns, name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   metav1.ObjectMeta{Name: name, Namespace: ns},
		AutomountServiceAccountToken: ptr(false),
	}
}

func renderCCM(p clusterPlan, o Options) ([]*unstructured.Unstructured, error) {
	name := p.release + capmox.SuffixCCM
	ccm := corev1.Container{
		Name:  "proxmox-cloud-controller-manager",
		Image: o.Images.CCM,
		Args: []string{
			"--cloud-provider=proxmox",
			"--cloud-config=" + CloudConfigFile,
			"--controllers=cloud-node,cloud-node-lifecycle",
			"--leader-elect=false",
			"--kubeconfig=" + TenantKubeconfig,
			"--authentication-kubeconfig=" + TenantKubeconfig,
			"--authorization-kubeconfig=" + TenantKubeconfig,
			"--secure-port=10258",
			"--authorization-always-allow-paths=/healthz,/livez,/readyz,/metrics",
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(10258), Scheme: corev1.URISchemeHTTPS}},
			InitialDelaySeconds: 20,
			PeriodSeconds:       30,
			TimeoutSeconds:      5,
		},
		Ports:        []corev1.ContainerPort{{Name: "https", ContainerPort: 10258}},
		VolumeMounts: []corev1.VolumeMount{mountKubeconfig, mountCloudConfig},
	}
	init := buildCloudConfigContainer(o.Images.Busybox, p.ccmSecret, p.insecure, []string{"provider: capmox"})
	pod := controllerPodSpec(name, init, []corev1.Container{ccm}, controllerVolumes(p.release, p.ccmSecret))
	return typedAll(serviceAccount(p.ns, name), deployment(p.ns, name, map[string]string{"app": name}, pod))
}

func renderCSI(p clusterPlan, o Options) ([]*unstructured.Unstructured, error) {
	if !p.csi {
		return nil, nil
	}
	sa := p.release + "-pcsi"
	sock := "--csi-address=unix:///csi/csi.sock"
	kube := "--kubeconfig=" + TenantKubeconfig
	socket := corev1.VolumeMount{Name: "socket-dir", MountPath: "/csi"}
	sidecar := func(name, image string, args ...string) corev1.Container {
		return corev1.Container{Name: name, Image: image, Args: append([]string{"-v=3", sock, "--timeout=3m", kube}, args...), VolumeMounts: []corev1.VolumeMount{socket, mountKubeconfig}}
	}
	containers := []corev1.Container{
		{Name: "proxmox-csi-plugin-controller", Image: o.Images.CSIController,
			Args:         []string{"-v=3", sock, "--cloud-config=" + CloudConfigFile, kube},
			VolumeMounts: []corev1.VolumeMount{socket, mountKubeconfig, mountCloudConfig}},
		sidecar("csi-attacher", o.Images.CSIAttacher),
		sidecar("csi-provisioner", o.Images.CSIProvisioner, "--default-fstype=ext4", "--feature-gates=Topology=true"),
		sidecar("csi-resizer", o.Images.CSIResizer),
	}
	features := []string{"provider: capmox", fmt.Sprintf("controllerVmID: %d", ControllerVMID(p.ns, p.release))}
	init := buildCloudConfigContainer(o.Images.Busybox, p.csiSecret, p.insecure, features)
	vols := append(controllerVolumes(p.release, p.csiSecret), corev1.Volume{Name: "socket-dir", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	pod := controllerPodSpec(sa, init, containers, vols)
	d := deployment(p.ns, p.release+capmox.SuffixCSIController, map[string]string{"app": p.release + "-pcsi-driver"}, pod)
	objs, err := typedAll(serviceAccount(p.ns, sa), d)
	if err != nil {
		return nil, err
	}
	hr, err := tenantCSIRelease(p, o)
	if err != nil {
		return nil, err
	}
	return append(objs, hr), nil
}

func typedAll(objs ...any) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		u, err := typed(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}
