package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pxsubstrate/pxsubstrate/capmoxrender"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv"
	"github.com/pxsubstrate/pxsubstrate/internal/testenv/pvelab"
	"github.com/pxsubstrate/pxsubstrate/pveacl/liveacl"
)

// The containers of the rendered <cluster>-pccm and <cluster>-pcsi-controller
// Deployments, and the programs of hack/ccmcsi-assets.sh the lab runs for
// them: the modules the Go module proxy serves (testenv.ProxmoxCCMModule,
// ProxmoxCSIModule, CSIProvisionerModule, CSIAttacherModule,
// CSIResizerModule), not the images' releases (docs/capmoxrender.md says
// what differs).
const (
	CCMContainer           = "proxmox-cloud-controller-manager"
	CSIControllerContainer = "proxmox-csi-plugin-controller"
)

// Programs are the cache's programs of the rendered containers, as
// <folder>/<program> under the folder hack/ccmcsi-assets.sh prints.
var Programs = map[string]string{
	CCMContainer:           "ccm-" + moduleVersion(testenv.ProxmoxCCMModule) + "/proxmox-cloud-controller-manager",
	CSIControllerContainer: "csi-" + moduleVersion(testenv.ProxmoxCSIModule) + "/proxmox-csi-controller",
	"csi-provisioner":      "provisioner-" + moduleVersion(testenv.CSIProvisionerModule) + "/csi-provisioner",
	"csi-attacher":         "attacher-" + moduleVersion(testenv.CSIAttacherModule) + "/csi-attacher",
	"csi-resizer":          "resizer-" + moduleVersion(testenv.CSIResizerModule) + "/csi-resizer",
}

func moduleVersion(mod string) string {
	_, v, _ := strings.Cut(mod, "@")
	return v
}

// ErrMissingCCMCSI says a program of hack/ccmcsi-assets.sh is missing.
var ErrMissingCCMCSI = errors.New("the Proxmox CCM, CSI controller or CSI sidecar binaries are missing")

// CCMCSIAssets are the programs hack/ccmcsi-assets.sh builds:
// $PXSUBSTRATE_CCMCSI_ASSETS, else <cache>/ccmcsi.
func CCMCSIAssets() testenv.Assets {
	return testenv.Assets{Env: "PXSUBSTRATE_CCMCSI_ASSETS", Default: filepath.Join(testenv.CacheRoot(), "ccmcsi"),
		Missing: ErrMissingCCMCSI, Hint: "run hack/ccmcsi-assets.sh"}
}

// Program returns the program the lab runs for a rendered container.
func Program(container string) (string, error) {
	rel, ok := Programs[container]
	if !ok {
		return "", fmt.Errorf("container %s is none of the Proxmox CCM's and CSI controller's", container)
	}
	return CCMCSIAssets().Binary(rel)
}

// Region is the Proxmox VE cluster's name, the region the CCM and CSI
// credentials Secrets name and the CCM writes on the Nodes.
const Region = pvelab.Cluster

// TrustStore is the file of a lab's Dir holding the Proxmox VE fake's CA,
// the trust store (SSL_CERT_FILE) the CCM and CSI controller run with.
const TrustStore = "proxmox-ca.pem"

// startPods starts the lab's kubelet of the management cluster's
// Deployments (pods.go).
func (l *Lab) startPods() error {
	ca := filepath.Join(l.Dir, TrustStore)
	if err := os.WriteFile(ca, l.Proxmox.CAPEM, 0o600); err != nil {
		return err
	}
	scratch, err := os.MkdirTemp("", "pxlab-")
	if err != nil {
		return err
	}
	l.pods = &podRunner{l: l, c: l.Client, programs: Program, env: []string{"SSL_CERT_FILE=" + ca}, scratch: scratch,
		pods: map[client.ObjectKey]*pod{}, skipped: map[client.ObjectKey]string{}}
	l.pods.start()
	l.stops = append(l.stops, func() error { return errors.Join(l.pods.stop(), os.RemoveAll(scratch)) })
	return nil
}

// createCredentialsSecret writes a CCM or CSI credentials Secret as
// docs/capmoxrender.md documents it: url (the API's, with /api2/json),
// token_id, token_secret and region.
func (l *Lab) createCredentialsSecret(ctx context.Context, ns, name string, s liveacl.TokenSecret) error {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		StringData: map[string]string{"url": l.Proxmox.URL, "token_id": s.TokenID, "token_secret": s.Secret.Reveal(), "region": Region}}
	err := l.Client.Create(ctx, sec)
	if apierrors.IsAlreadyExists(err) {
		// A later cluster of the tenant naming the same Secret: the
		// tenant's one token serves both.
		var have corev1.Secret
		if err := l.Client.Get(ctx, client.ObjectKeyFromObject(sec), &have); err != nil {
			return err
		}
		if string(have.Data["token_id"]) == s.TokenID {
			return nil
		}
		return fmt.Errorf("the credentials Secret %s/%s holds token %q, not the tenant's %s", ns, name, have.Data["token_id"], s.TokenID)
	}
	if err != nil {
		return fmt.Errorf("cannot create the credentials Secret %s/%s: %w", ns, name, err)
	}
	return nil
}

// createAdminKubeconfig writes Kamaji's admin kubeconfig Secret of a
// control plane, <release>-admin-kubeconfig, whose key super-admin.svc the
// CCM and CSI controller mount. Kamaji's reaches the API server by its
// Service name; the lab's by the tenant API server's address.
func (l *Lab) createAdminKubeconfig(ctx context.Context, ns, release string) error {
	kc, err := testenv.Kubeconfig(l.Tenant, "")
	if err != nil {
		return err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: release + "-admin-kubeconfig"},
		Data: map[string][]byte{capmoxrender.TenantKubeconfigKey: kc}}
	if err := l.Client.Create(ctx, sec); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cannot create the admin kubeconfig Secret %s/%s: %w", ns, sec.Name, err)
	}
	return nil
}

// CSIDriverName is the Proxmox CSI driver's name.
const CSIDriverName = "csi.proxmox.sinextra.dev"

// installTenantCSI does on the tenant API server what Flux's install of
// the rendered <cluster>-csi-proxmox HelmRelease does for the controller:
// the CSIDriver of the chart with the render's post-render patch
// (storageCapacity false) and the StorageClasses of the release's values,
// as the chart's template writes them. The node plugin's DaemonSet is the
// VMs' (the lab's node agent plays its registration).
func (l *Lab) installTenantCSI(ctx context.Context, classes []capmoxrender.StorageClass) error {
	drv := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: CSIDriverName}, Spec: storagev1.CSIDriverSpec{
		AttachRequired: ptr(true), PodInfoOnMount: ptr(true), StorageCapacity: ptr(false),
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}}}
	if err := l.TenantClient.Create(ctx, drv); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cannot create the CSIDriver on the tenant: %w", err)
	}
	for _, sc := range StorageClasses(classes) {
		if err := l.TenantClient.Create(ctx, sc); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cannot create StorageClass %s on the tenant: %w", sc.Name, err)
		}
	}
	return nil
}

// StorageClasses are the StorageClasses the CSI chart's template makes of
// the render's storageClass values: the driver as provisioner, volume
// expansion on, WaitForFirstConsumer, the reclaim policy (default
// Delete), and the parameters fstype (default ext4), storage and ssd.
func StorageClasses(classes []capmoxrender.StorageClass) []*storagev1.StorageClass {
	var out []*storagev1.StorageClass
	for _, c := range classes {
		policy := corev1.PersistentVolumeReclaimPolicy(c.ReclaimPolicy)
		if policy == "" {
			policy = corev1.PersistentVolumeReclaimDelete
		}
		fstype := c.FSType
		if fstype == "" {
			fstype = "ext4"
		}
		params := map[string]string{"csi.storage.k8s.io/fstype": fstype, "storage": c.Storage}
		if c.SSD {
			params["ssd"] = "true"
		}
		mode := storagev1.VolumeBindingWaitForFirstConsumer
		out = append(out, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: c.Name}, Provisioner: CSIDriverName,
			AllowVolumeExpansion: ptr(true), VolumeBindingMode: &mode, ReclaimPolicy: &policy, Parameters: params})
	}
	return out
}

func ptr[T any](v T) *T { return &v }
