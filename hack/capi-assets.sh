#!/usr/bin/env bash
# Builds the managers of Cluster API core and of the in-cluster IPAM provider
# from the Go module proxy into a cache folder outside the checkout, once,
# and prints the folder (it holds cluster-api-manager and ipam-manager).
# Tests start them against the test API server (internal/fakes/capi).
#
#   hack/capi-assets.sh          prints the folder; builds what is missing first
#
# Environment:
#   PXSUBSTRATE_CACHE  cache root [${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate]
#
# The versions are not set here: they are the constants CAPIModule and
# CAPIIPAMModule in internal/fakes/kube/envtest.go, which also pick the CRDs
# and webhook configurations the tests install, so binary and manifests
# always come from the same release. To move a version, change the constant;
# the next run builds into a new folder named after both versions.
#
# Cluster API's go.mod replaces its sigs.k8s.io/cluster-api/api module with
# ./api and requires it at a placeholder version, so `go install ...@version`
# refuses it. A scratch module that requires it and points the api module at
# its published twin of the same version builds the manager (package
# sigs.k8s.io/cluster-api/core) unchanged. The IPAM provider has no replace
# and is built through a scratch module the same way.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "capi-assets: $*" >&2; }
fail() { say "$*"; exit 1; }

command -v go >/dev/null || fail "go is not on PATH; install Go 1.26 first"
consts=internal/fakes/kube/envtest.go
version_in() {
	sed -n "s|^[[:space:]]*$1[[:space:]]*=[[:space:]]*\"$2@\(v[^\"]*\)\".*|\1|p" "$consts"
}
CAPI_VERSION="$(version_in CAPIModule sigs.k8s.io/cluster-api)"
IPAM_VERSION="$(version_in CAPIIPAMModule sigs.k8s.io/cluster-api-ipam-provider-in-cluster)"
[[ -n "$CAPI_VERSION" ]] || fail "cannot read CAPIModule from $consts"
[[ -n "$IPAM_VERSION" ]] || fail "cannot read CAPIIPAMModule from $consts"

CACHE="${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}"
OUT="$CACHE/capi/${CAPI_VERSION}-ipam${IPAM_VERSION}"
mkdir -p "$OUT"

# built BIN MODULE VERSION: BIN exists and go version -m says it was built
# from MODULE at VERSION (read whole before matching; see kube-assets.sh).
built() {
	local info
	[[ -x "$1" ]] && info="$(go version -m "$1" 2>/dev/null)" &&
		grep -qE "^[[:space:]]+mod[[:space:]]+$2[[:space:]]+$3([[:space:]]|\$)" <<<"$info"
}

scratch="$(mktemp -d "${TMPDIR:-/tmp}/pxsubstrate-capi.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off

# build NAME MODULE VERSION PACKAGE [REPLACE] builds PACKAGE of MODULE@VERSION
# into $OUT/NAME inside a scratch module.
build() {
	local name="$1" module="$2" version="$3" pkg="$4" replace="${5:-}" dir="$scratch/$1"
	say "building $name ($module $version) into $OUT (once; about 10 minutes on 2 cores)"
	mkdir -p "$dir"
	printf 'module scratch/%s\n\ngo 1.26\n\nrequire %s %s\n%s\n' "$name" "$module" "$version" "$replace" >"$dir/go.mod"
	(cd "$dir" && go get "$pkg@$version" >"$scratch/get.log" 2>&1) ||
		{ cat "$scratch/get.log" >&2; fail "go get $pkg@$version failed"; }
	(cd "$dir" && go build -trimpath -ldflags "-s -w" -o "$OUT/$name.new" "$pkg")
	mv "$OUT/$name.new" "$OUT/$name"
	built "$OUT/$name" "$module" "$version" || fail "the built $name does not report $module $version"
}

built "$OUT/cluster-api-manager" sigs.k8s.io/cluster-api "$CAPI_VERSION" ||
	build cluster-api-manager sigs.k8s.io/cluster-api "$CAPI_VERSION" sigs.k8s.io/cluster-api/core \
		"replace sigs.k8s.io/cluster-api/api => sigs.k8s.io/cluster-api/api $CAPI_VERSION"
built "$OUT/ipam-manager" sigs.k8s.io/cluster-api-ipam-provider-in-cluster "$IPAM_VERSION" ||
	build ipam-manager sigs.k8s.io/cluster-api-ipam-provider-in-cluster "$IPAM_VERSION" \
		sigs.k8s.io/cluster-api-ipam-provider-in-cluster

echo "$OUT"
