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
# The versions are not set here (hack/managers.sh reads them): they are the
# constants CAPIModule, CAPIIPAMModule, CapmoxModule, CapmoxCAPIModule,
# CapmoxV07Module and CABPTModule in internal/testenv/versions.go, which also pick the CRDs
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
# Cluster API core, the IPAM provider and CABPT are built in one module
# each with the programs of hack/ccmcsi-assets.sh that share their
# Kubernetes minor (hack/managers.sh: need_shared), so their common
# libraries compile once; capmox's two generations keep a module each.
# Builds run one after the other (the test machine has two cores); on two
# cores each took 3 to 7 minutes on a loaded machine (capmox v0.9.0 the
# longest), downloads included.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "capi-assets: $*" >&2; }
fail() { say "$*"; exit 1; }

command -v go >/dev/null || fail "go is not on PATH; install Go 1.26 first"
CACHE="${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}"
ROOT="$CACHE/capi"

. hack/modbuild.sh
. hack/managers.sh

need_shared
need "capmox-$CAPMOX_VERSION" capmox-manager "$CAPMOX_MODULE" "$CAPMOX_VERSION" "$CAPMOX_MODULE/cmd" \
	-replace="sigs.k8s.io/cluster-api=sigs.k8s.io/cluster-api@$CAPMOX_CAPI_VERSION" \
	-replace="sigs.k8s.io/cluster-api/test=sigs.k8s.io/cluster-api/test@$CAPMOX_CAPI_VERSION"
need "capmox-$CAPMOX07_VERSION" capmox-manager "$CAPMOX_MODULE" "$CAPMOX07_VERSION" "$CAPMOX_MODULE/cmd"

echo "$ROOT"
