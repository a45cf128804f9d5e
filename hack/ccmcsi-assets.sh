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
# CSIResizerModule in internal/testenv/versions.go (hack/managers.sh reads
# them). The CCM, csi-provisioner and csi-attacher are built with the
# programs of hack/capi-assets.sh that share their Kubernetes minor, in one
# scratch module each group (hack/managers.sh: need_shared); the CSI
# controller and csi-resizer alone. A scratch module requires each
# program's module at its pinned version (with the modules' own replace
# directives that name a published version),
# with -trimpath -ldflags "-s -w", and checked with `go version -m` before it
# is used or kept. The module proxy serves none of the versions the render's
# images carry (CCM v0.16.1, CSI v0.20.0); docs/capmoxrender.md says what
# differs. README.md records how long each build takes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "ccmcsi-assets: $*" >&2; }
fail() { say "$*"; exit 1; }

command -v go >/dev/null || fail "go is not on PATH; install Go 1.26 first"
CACHE="${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}"
ROOT="$CACHE/ccmcsi"

. hack/modbuild.sh
. hack/managers.sh

need_shared
need "csi-$CSI_VERSION" proxmox-csi-controller "$CSI_MODULE" "$CSI_VERSION" "$CSI_MODULE/cmd/controller"
need "resizer-$RESIZER_VERSION" csi-resizer "$RESIZER_MODULE" "$RESIZER_VERSION" "$RESIZER_MODULE/cmd/csi-resizer"

echo "$ROOT"
