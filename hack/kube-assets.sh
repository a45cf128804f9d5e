#!/usr/bin/env bash
# Builds the kube-apiserver and etcd binaries that envtest starts, the
# kubectl that end-to-end tests run scripts with, the
# kube-controller-manager whose garbage collector, node lifecycle, volume
# binder and attach-detach controllers the lab (internal/testenv/lab) runs,
# and the kube-scheduler that places the lab's tenant Pods, from the Go
# module proxy,
# into a cache folder outside the checkout. A second run finds them and only
# prints the folder.
#
#   hack/kube-assets.sh          prints the folder holding kube-apiserver, etcd, kubectl,
#                                kube-controller-manager and kube-scheduler
#
# Environment:
#   PXSUBSTRATE_CACHE  cache root [${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate]
#   KUBE_VERSION       kube-apiserver release [1.37.2]
#   ETCD_VERSION       etcd server release [3.7.3]
#
# k8s.io/kubernetes cannot be built with `go install`: its go.mod points every
# staging module (k8s.io/api, k8s.io/apiserver, ...) at ./staging with a
# placeholder version. A scratch module that requires it and replaces each
# staging module with its published v0.Y.Z twin builds it (kube-apiserver and
# kubectl) unchanged. etcd's
# server module has relative replaces too and takes the same approach.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-3.7.3}"
CACHE="${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}"
OUT="$CACHE/kube/${KUBE_VERSION}-etcd${ETCD_VERSION}"

say() { echo "kube-assets: $*" >&2; }
fail() { say "$*"; exit 1; }

command -v go >/dev/null || fail "go is not on PATH; install Go 1.26 first"
[[ "$KUBE_VERSION" =~ ^1\.([0-9]+)\.([0-9]+)$ ]] || fail "KUBE_VERSION must look like 1.37.2, not $KUBE_VERSION"
staging_version="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
minor="${BASH_REMATCH[1]}"

mkdir -p "$OUT"
# The version is read whole before it is matched: with pipefail, grep -q
# closing the pipe at its first match would fail the writer with SIGPIPE
# and make a good binary look wrong (and be rebuilt).
version_of() { [[ -x "$1" ]] && "$1" --version 2>/dev/null; }
kas_ok() { local v; v="$(version_of "$OUT/kube-apiserver")" && grep -q "v${KUBE_VERSION}\$" <<<"$v"; }
etcd_ok() { local v; v="$(version_of "$OUT/etcd")" && grep -q "Version: ${ETCD_VERSION}\$" <<<"$v"; }
kubectl_ok() {
	local v
	[[ -x "$OUT/kubectl" ]] && v="$("$OUT/kubectl" version --client 2>/dev/null)" && grep -q "^Client Version: v${KUBE_VERSION}\$" <<<"$v"
}

kcm_ok() { local v; v="$(version_of "$OUT/kube-controller-manager")" && grep -q "v${KUBE_VERSION}\$" <<<"$v"; }
sched_ok() { local v; v="$(version_of "$OUT/kube-scheduler")" && grep -q "v${KUBE_VERSION}\$" <<<"$v"; }

if kas_ok && etcd_ok && kubectl_ok && kcm_ok && sched_ok; then
	echo "$OUT"
	exit 0
fi

scratch="$(mktemp -d "${TMPDIR:-/tmp}/pxsubstrate-kube.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off

# build_kube CMD CHECK builds k8s.io/kubernetes/cmd/CMD into $OUT/CMD and
# checks it with CHECK. The scratch module is written by the first call.
build_kube() {
	local cmd="$1" check="$2" gomod goline ldflags p start=$SECONDS
	say "building $cmd v${KUBE_VERSION} into $OUT (once; about 5 minutes on 2 cores)"
	if [[ ! -f "$scratch/kas/go.mod" ]]; then
		gomod="$(go mod download -json "k8s.io/kubernetes@v${KUBE_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
		[[ -f "$gomod" ]] || fail "cannot download k8s.io/kubernetes@v${KUBE_VERSION} from the module proxy"
		goline="$(awk '$1 == "go" { print $2; exit }' "$gomod")"
		mkdir -p "$scratch/kas"
		{
			printf 'module scratch/kubeapiserver\n\ngo %s\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$goline" "$KUBE_VERSION"
			awk '/^require[[:space:]]*\(/ {r=1; next} r && /^\)/ {r=0; next} r && $1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "$gomod" |
				sort -u | while read -r m; do printf '\t%s => %s %s\n' "$m" "$m" "$staging_version"; done
			printf ')\n'
		} >"$scratch/kas/go.mod"
	fi
	(cd "$scratch/kas" && go get "k8s.io/kubernetes/cmd/$cmd@v${KUBE_VERSION}" >"$scratch/get.log" 2>&1) ||
		{ cat "$scratch/get.log" >&2; fail "go get k8s.io/kubernetes/cmd/$cmd failed"; }
	ldflags="-s -w"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $p.gitVersion=v${KUBE_VERSION} -X $p.gitMajor=1 -X $p.gitMinor=${minor} -X $p.gitTreeState=clean"
	done
	(cd "$scratch/kas" && go build -trimpath -gcflags=all=-dwarf=false -ldflags "$ldflags" -o "$OUT/$cmd.new" "k8s.io/kubernetes/cmd/$cmd")
	mv "$OUT/$cmd.new" "$OUT/$cmd"
	"$check" || fail "the built $cmd does not report v${KUBE_VERSION}"
	say "built $cmd in $((SECONDS - start)) s"
}

kas_ok || build_kube kube-apiserver kas_ok
kubectl_ok || build_kube kubectl kubectl_ok
kcm_ok || build_kube kube-controller-manager kcm_ok
sched_ok || build_kube kube-scheduler sched_ok

if ! etcd_ok; then
	say "building etcd v${ETCD_VERSION} into $OUT (once)"
	mkdir -p "$scratch/etcd"
	printf 'module scratch/etcd\n\ngo 1.22\n' >"$scratch/etcd/go.mod"
	(cd "$scratch/etcd" && go get "go.etcd.io/etcd/server/v3@v${ETCD_VERSION}" >"$scratch/get.log" 2>&1) ||
		{ cat "$scratch/get.log" >&2; fail "go get go.etcd.io/etcd/server/v3 failed"; }
	(cd "$scratch/etcd" && go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "$OUT/etcd.new" go.etcd.io/etcd/server/v3)
	mv "$OUT/etcd.new" "$OUT/etcd"
	etcd_ok || fail "the built etcd does not report ${ETCD_VERSION}"
fi

echo "$OUT"
