#!/usr/bin/env bash
# Builds Kube-OVN's controller and webhook, which the tests of
# internal/testenv/kubeovn start against the test API server and a real OVN
# northbound and southbound database, from the Go module proxy into a cache
# folder outside the checkout, once, and prints that folder:
#
#   <cache>/kube-ovn/<version>/kube-ovn-controller   (./cmd/controller)
#   <cache>/kube-ovn/<version>/kube-ovn-webhook      (./cmd, the multi-call
#                                                     binary; it picks the
#                                                     webhook by its name)
#
#   hack/kubeovn-assets.sh       prints the folder; builds what is missing first
#
# Environment:
#   PXSUBSTRATE_CACHE  cache root [${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate]
#
# The version is the constant KubeOVNModule in internal/testenv/versions.go
# (the tests take the CRDs from the same module). Kube-OVN's go.mod replaces
# libovsdb, arp and kubevirt's client with Kube-OVN forks and pins every
# k8s.io module at v0.32.8: all name published versions, so the scratch
# module repeats them as they are (hack/modbuild.sh) and needs nothing more.
# Each binary is checked with `go version -m` before it is used or kept.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "kubeovn-assets: $*" >&2; }
fail() { say "$*"; exit 1; }

command -v go >/dev/null || fail "go is not on PATH; install Go 1.26 first"
consts=internal/testenv/versions.go
MODULE=github.com/kubeovn/kube-ovn
VERSION="$(sed -n "s|^[[:space:]]*KubeOVNModule[[:space:]]*=[[:space:]]*\"$MODULE@\(v[^\"]*\)\".*|\1|p" "$consts")"
[[ -n "$VERSION" ]] || fail "cannot read KubeOVNModule's version from $consts"

CACHE="${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}"
ROOT="$CACHE/kube-ovn"

. hack/modbuild.sh

need "$VERSION" kube-ovn-controller "$MODULE" "$VERSION" "$MODULE/cmd/controller"
need "$VERSION" kube-ovn-webhook "$MODULE" "$VERSION" "$MODULE/cmd"

echo "$ROOT/$VERSION"
