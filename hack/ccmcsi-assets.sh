#!/usr/bin/env bash
# Builds the Proxmox cloud controller manager, the Proxmox CSI plugin's
# controller and the three CSI sidecars the lab runs beside it
# (internal/testenv/lab) from the Go module proxy into a cache folder
# outside the checkout, once, and prints that folder. It holds one folder per
# build, named after the version in it:
#
#   ccm-<version>/          proxmox-cloud-controller-manager
#   csi-<version>/          proxmox-csi-controller (the plugin's cmd/controller)
#   provisioner-<version>/  csi-provisioner
#   attacher-<version>/     csi-attacher
#   resizer-<version>/      csi-resizer
#
#   hack/ccmcsi-assets.sh        prints the folder; builds what is missing first
#
# Environment:
#   PXSUBSTRATE_CACHE  cache root [${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate]
#
# The versions are not set here: they are the constants ProxmoxCCMModule,
# ProxmoxCSIModule, CSIProvisionerModule, CSIAttacherModule and
# CSIResizerModule in internal/testenv/versions.go. Each program is built
# alone in a scratch module that requires its module at the pinned version
# (with the module's own replace directives that name a published version),
# with -trimpath -ldflags "-s -w", and checked with `go version -m` before it
# is used or kept. The module proxy serves none of the versions the render's
# images carry (CCM v0.16.1, CSI v0.20.0); docs/capmoxrender.md says what
# differs. README.md records how long each build takes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "ccmcsi-assets: $*" >&2; }
fail() { say "$*"; exit 1; }

command -v go >/dev/null || fail "go is not on PATH; install Go 1.26 first"
consts=internal/testenv/versions.go
version_in() {
	sed -n "s|^[[:space:]]*$1[[:space:]]*=[[:space:]]*\"$2@\(v[^\"]*\)\".*|\1|p" "$consts"
}
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
for v in CCM_VERSION CSI_VERSION PROVISIONER_VERSION ATTACHER_VERSION RESIZER_VERSION; do
	[[ -n "${!v}" ]] || fail "cannot read the version $v from $consts"
done

CACHE="${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}"
ROOT="$CACHE/ccmcsi"

. hack/modbuild.sh

need "ccm-$CCM_VERSION" proxmox-cloud-controller-manager "$CCM_MODULE" "$CCM_VERSION" \
	"$CCM_MODULE/cmd/proxmox-cloud-controller-manager"
need "csi-$CSI_VERSION" proxmox-csi-controller "$CSI_MODULE" "$CSI_VERSION" "$CSI_MODULE/cmd/controller"
need "provisioner-$PROVISIONER_VERSION" csi-provisioner "$PROVISIONER_MODULE" "$PROVISIONER_VERSION" \
	"$PROVISIONER_MODULE/cmd/csi-provisioner"
need "attacher-$ATTACHER_VERSION" csi-attacher "$ATTACHER_MODULE" "$ATTACHER_VERSION" "$ATTACHER_MODULE/cmd/csi-attacher"
need "resizer-$RESIZER_VERSION" csi-resizer "$RESIZER_MODULE" "$RESIZER_VERSION" "$RESIZER_MODULE/cmd/csi-resizer"

echo "$ROOT"
