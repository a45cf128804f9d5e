package testenv

// Versions of the envtest binaries and of the modules whose CRDs tests load
// and whose managers hack/capi-assets.sh, hack/kubeovn-assets.sh and
// hack/ccmcsi-assets.sh build (they read these lines).
const (
	KubeVersion    = "1.37.2"
	EtcdVersion    = "3.7.3"
	CAPIModule     = "sigs.k8s.io/cluster-api@v1.14.2"
	CAPIIPAMModule = "sigs.k8s.io/cluster-api-ipam-provider-in-cluster@v1.0.3"
	// CapmoxModule is the Proxmox provider of API v1alpha2 (storage), still
	// serving v1alpha1 through its conversion webhook.
	CapmoxModule = "github.com/ionos-cloud/cluster-api-provider-proxmox@v0.9.0"
	// CapmoxCAPIModule is the Cluster API CapmoxModule is built with: its
	// go.mod asks for v1.12.9, which the module proxy does not serve, so the
	// build replaces sigs.k8s.io/cluster-api and sigs.k8s.io/cluster-api/test
	// with this patch release of the same minor.
	CapmoxCAPIModule = "sigs.k8s.io/cluster-api@v1.12.10"
	// CapmoxV07Module is the Proxmox provider of API v1alpha1 only (Cluster
	// API contract v1beta1).
	CapmoxV07Module = "github.com/ionos-cloud/cluster-api-provider-proxmox@v0.7.2"
	// CABPTModule is the Talos bootstrap provider (TalosConfig and
	// TalosConfigTemplate).
	CABPTModule = "github.com/siderolabs/cluster-api-bootstrap-provider-talos@v0.6.10"
	// KubeOVNModule is the Kube-OVN whose controller and webhook
	// hack/kubeovn-assets.sh builds and internal/testenv/kubeovn starts, with
	// the CRDs of the same module. Cozystack ships v1.15, which the module
	// proxy does not serve; docs/kube-ovn.md says what differs.
	KubeOVNModule = "github.com/kubeovn/kube-ovn@v1.14.10"
	// ProxmoxCCMModule is the Proxmox cloud controller manager the lab runs
	// in its capmox provider mode. The render pins a newer image (v0.16.1),
	// whose module the proxy does not serve; docs/capmoxrender.md says what
	// differs.
	ProxmoxCCMModule = "github.com/sergelogvinov/proxmox-cloud-controller-manager@v0.7.0"
	// ProxmoxCSIModule is the Proxmox CSI plugin whose controller the lab
	// runs (the render pins the v0.20.0 image; the proxy does not serve it).
	ProxmoxCSIModule = "github.com/sergelogvinov/proxmox-csi-plugin@v0.18.1"
	// CSIProvisionerModule, CSIAttacherModule and CSIResizerModule are the
	// CSI sidecars the lab runs beside the CSI controller.
	CSIProvisionerModule = "github.com/kubernetes-csi/external-provisioner/v6@v6.3.0"
	CSIAttacherModule    = "github.com/kubernetes-csi/external-attacher/v4@v4.12.0"
	CSIResizerModule     = "github.com/kubernetes-csi/external-resizer@v1.14.0"
)
