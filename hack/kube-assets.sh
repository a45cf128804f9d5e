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

# build_kube CMD... builds k8s.io/kubernetes/cmd/CMD of each CMD into
# $OUT/CMD with one go build, so that one program's link overlaps the
# next one's compiling and the packages they share are compiled once.
build_kube() {
	local gomod goline ldflags p cmd start=$SECONDS pkgs=() gets=()
	say "building $* v${KUBE_VERSION} into $OUT (once; about 7 minutes on 2 cores)"
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
	for cmd in "$@"; do
		pkgs+=("k8s.io/kubernetes/cmd/$cmd")
		gets+=("k8s.io/kubernetes/cmd/$cmd@v${KUBE_VERSION}")
	done
	(cd "$scratch/kas" && go get "${gets[@]}" >"$scratch/get.log" 2>&1) ||
		{ cat "$scratch/get.log" >&2; fail "go get ${gets[*]} failed"; }
	ldflags="-s -w"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $p.gitVersion=v${KUBE_VERSION} -X $p.gitMajor=1 -X $p.gitMinor=${minor} -X $p.gitTreeState=clean"
	done
	mkdir -p "$scratch/bin"
	(cd "$scratch/kas" && go build -trimpath -gcflags=all=-dwarf=false -ldflags "$ldflags" -o "$scratch/bin/" "${pkgs[@]}")
	for cmd in "$@"; do
		mv "$scratch/bin/$cmd" "$OUT/$cmd.new"
		mv "$OUT/$cmd.new" "$OUT/$cmd"
	done
	say "built $* in $((SECONDS - start)) s"
}

missing=()
kas_ok || missing+=(kube-apiserver)
kubectl_ok || missing+=(kubectl)
kcm_ok || missing+=(kube-controller-manager)
sched_ok || missing+=(kube-scheduler)
if ((${#missing[@]})); then
	build_kube "${missing[@]}"
	kas_ok || fail "the built kube-apiserver does not report v${KUBE_VERSION}"
	kubectl_ok || fail "the built kubectl does not report v${KUBE_VERSION}"
	kcm_ok || fail "the built kube-controller-manager does not report v${KUBE_VERSION}"
	sched_ok || fail "the built kube-scheduler does not report v${KUBE_VERSION}"
fi

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
