#!/usr/bin/env bash
# Builds the managers the tests start against the test API server
# (internal/testenv/capi) from the Go module proxy into a cache folder outside
# the checkout, once, and prints that folder. It holds one folder per build,
# named after the versions in it:
#
#   <capi>-ipam<ipam>/   cluster-api-manager, ipam-manager (Cluster API core
#                        and the in-cluster IPAM provider)
#   capmox-<version>/    capmox-manager, once per capmox generation (v0.9.0,
#                        v0.7.2)
#   cabpt-<version>/     cabpt-manager (the Talos bootstrap provider)
#
#   hack/capi-assets.sh          prints the folder; builds what is missing first
#
# Environment:
#   PXSUBSTRATE_CACHE  cache root [${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate]
#
# The versions are not set here: they are the constants CAPIModule,
# CAPIIPAMModule, CapmoxModule, CapmoxCAPIModule, CapmoxV07Module and
# CABPTModule in internal/testenv/versions.go, which also pick the CRDs
# and webhook configurations the tests install, so binary and manifests
# always come from the same release. To move a version, change the constant;
# the next run builds into a new folder and leaves the others alone. Each
# binary is checked with `go version -m` before it is used or kept.
#
# Each manager is built inside a scratch module that requires its module at
# the pinned version. The replace directives of a dependency's go.mod do not
# apply there, so the scratch module repeats those of the built module that
# name a published version (CABPT's github.com/google/cel-go v0.22.0, for
# one), then adds its own:
#   - Cluster API's go.mod replaces its sigs.k8s.io/cluster-api/api module
#     with ./api and requires it at a placeholder version, so `go install
#     ...@version` refuses it; the scratch module points the api module at
#     its published twin of the same version and builds
#     sigs.k8s.io/cluster-api/core unchanged;
#   - capmox v0.9.0 asks for sigs.k8s.io/cluster-api and .../test v1.12.9,
#     which the module proxy does not serve: both are replaced with
#     CapmoxCAPIModule's version (v1.12.10, same minor); its main package
#     is .../cmd, as for v0.7.2, which builds as its go.mod says (Cluster
#     API v1.9.6);
#   - the IPAM provider and CABPT (main package: the module root) need
#     nothing more.
#
# Builds run one after the other (the test machine has two cores); on two
# cores each took 3 to 7 minutes on a loaded machine (capmox v0.9.0 the
# longest), downloads included.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "capi-assets: $*" >&2; }
fail() { say "$*"; exit 1; }

command -v go >/dev/null || fail "go is not on PATH; install Go 1.26 first"
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
for v in CAPI_VERSION IPAM_VERSION CAPMOX_VERSION CAPMOX_CAPI_VERSION CAPMOX07_VERSION CABPT_VERSION; do
	[[ -n "${!v}" ]] || fail "cannot read the version $v from $consts"
done

CACHE="${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}"
ROOT="$CACHE/capi"

. hack/modbuild.sh

need "${CAPI_VERSION}-ipam${IPAM_VERSION}" cluster-api-manager sigs.k8s.io/cluster-api "$CAPI_VERSION" \
	sigs.k8s.io/cluster-api/core -replace="sigs.k8s.io/cluster-api/api=sigs.k8s.io/cluster-api/api@$CAPI_VERSION"
need "${CAPI_VERSION}-ipam${IPAM_VERSION}" ipam-manager sigs.k8s.io/cluster-api-ipam-provider-in-cluster "$IPAM_VERSION" \
	sigs.k8s.io/cluster-api-ipam-provider-in-cluster
need "capmox-$CAPMOX_VERSION" capmox-manager "$CAPMOX_MODULE" "$CAPMOX_VERSION" "$CAPMOX_MODULE/cmd" \
	-replace="sigs.k8s.io/cluster-api=sigs.k8s.io/cluster-api@$CAPMOX_CAPI_VERSION" \
	-replace="sigs.k8s.io/cluster-api/test=sigs.k8s.io/cluster-api/test@$CAPMOX_CAPI_VERSION"
need "capmox-$CAPMOX07_VERSION" capmox-manager "$CAPMOX_MODULE" "$CAPMOX07_VERSION" "$CAPMOX_MODULE/cmd"
need "cabpt-$CABPT_VERSION" cabpt-manager "$CABPT_MODULE" "$CABPT_VERSION" "$CABPT_MODULE"

echo "$ROOT"
