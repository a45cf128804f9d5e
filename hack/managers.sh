# Sourced by hack/capi-assets.sh and hack/ccmcsi-assets.sh after
# hack/modbuild.sh: the versions of every manager the tests start (the
# constants of internal/testenv/versions.go, so binary and manifests come
# from the same release), and need_shared, which builds the programs of
# both scripts whose Kubernetes libraries share a minor together
# (need_together), whichever script runs first:
#
#   Kubernetes 1.36: Cluster API core, csi-provisioner and csi-attacher
#   Kubernetes 1.32: the in-cluster IPAM provider, CABPT and the Proxmox CCM
#
# The others keep a module of their own: capmox v0.9.0 (1.34) and v0.7.2
# (1.32, but controller-runtime v0.19, which the group's v0.20 would
# replace), the Proxmox CSI controller (1.35) and csi-resizer (1.33).
# The caller sets CACHE and defines say and fail.

consts=internal/testenv/versions.go
version_in() {
	sed -n "s|^[[:space:]]*$1[[:space:]]*=[[:space:]]*\"$2@\(v[^\"]*\)\".*|\1|p" "$consts"
}
CAPI_VERSION="$(version_in CAPIModule sigs.k8s.io/cluster-api)"
IPAM_VERSION="$(version_in CAPIIPAMModule sigs.k8s.io/cluster-api-ipam-provider-in-cluster)"
CAPMOX_MODULE=github.com/ionos-cloud/cluster-api-provider-proxmox
CAPMOX_VERSION="$(version_in CapmoxModule "$CAPMOX_MODULE")"
CAPMOX_CAPI_VERSION="$(version_in CapmoxCAPIModule sigs.k8s.io/cluster-api)"
CAPMOX07_VERSION="$(version_in CapmoxV07Module "$CAPMOX_MODULE")"
CABPT_MODULE=github.com/siderolabs/cluster-api-bootstrap-provider-talos
CABPT_VERSION="$(version_in CABPTModule "$CABPT_MODULE")"
CCM_MODULE=github.com/sergelogvinov/proxmox-cloud-controller-manager
CCM_VERSION="$(version_in ProxmoxCCMModule "$CCM_MODULE")"
CSI_MODULE=github.com/sergelogvinov/proxmox-csi-plugin
CSI_VERSION="$(version_in ProxmoxCSIModule "$CSI_MODULE")"
PROVISIONER_MODULE=github.com/kubernetes-csi/external-provisioner/v6
PROVISIONER_VERSION="$(version_in CSIProvisionerModule "$PROVISIONER_MODULE")"
ATTACHER_MODULE=github.com/kubernetes-csi/external-attacher/v4
ATTACHER_VERSION="$(version_in CSIAttacherModule "$ATTACHER_MODULE")"
RESIZER_MODULE=github.com/kubernetes-csi/external-resizer
RESIZER_VERSION="$(version_in CSIResizerModule "$RESIZER_MODULE")"
for v in CAPI_VERSION IPAM_VERSION CAPMOX_VERSION CAPMOX_CAPI_VERSION CAPMOX07_VERSION CABPT_VERSION \
	CCM_VERSION CSI_VERSION PROVISIONER_VERSION ATTACHER_VERSION RESIZER_VERSION; do
	[[ -n "${!v}" ]] || fail "cannot read the version $v from $consts"
done

# need_shared builds the two groups' programs that are missing.
need_shared() {
	# Cluster API's go.mod replaces its api module with ./api and requires
	# it at a placeholder version; its published twin of the same version
	# stands in.
	need_together k8s-1.36 \
		"capi/${CAPI_VERSION}-ipam${IPAM_VERSION}|cluster-api-manager|sigs.k8s.io/cluster-api|$CAPI_VERSION|sigs.k8s.io/cluster-api/core" \
		"ccmcsi/provisioner-$PROVISIONER_VERSION|csi-provisioner|$PROVISIONER_MODULE|$PROVISIONER_VERSION|$PROVISIONER_MODULE/cmd/csi-provisioner" \
		"ccmcsi/attacher-$ATTACHER_VERSION|csi-attacher|$ATTACHER_MODULE|$ATTACHER_VERSION|$ATTACHER_MODULE/cmd/csi-attacher" \
		-- -replace="sigs.k8s.io/cluster-api/api=sigs.k8s.io/cluster-api/api@$CAPI_VERSION"
	need_together k8s-1.32 \
		"capi/${CAPI_VERSION}-ipam${IPAM_VERSION}|ipam-manager|sigs.k8s.io/cluster-api-ipam-provider-in-cluster|$IPAM_VERSION|sigs.k8s.io/cluster-api-ipam-provider-in-cluster" \
		"capi/cabpt-$CABPT_VERSION|cabpt-manager|$CABPT_MODULE|$CABPT_VERSION|$CABPT_MODULE" \
		"ccmcsi/ccm-$CCM_VERSION|proxmox-cloud-controller-manager|$CCM_MODULE|$CCM_VERSION|$CCM_MODULE/cmd/proxmox-cloud-controller-manager"
}
