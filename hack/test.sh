#!/usr/bin/env bash
# The project's test command: installs what the tests need, then runs the
# whole suite with the race detector.
#
#   hack/test.sh [go test flags...] [packages]   e.g. hack/test.sh -run TestRunner ./engine/...
#
# Without packages it tests ./... (flags alone, like -count=1, included).
#
# What it provides:
#   - a real ovsdb-server (Debian package ovn-central), installed with apt-get
#     when missing;
#   - kube-apiserver and etcd for envtest, built once from the Go module proxy
#     into ${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}
#     (about 5 minutes on 2 cores the first time, instant afterwards).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "test.sh: $*" >&2; }

if ! command -v ovsdb-server >/dev/null || [[ ! -f /usr/share/ovn/ovn-nb.ovsschema ]]; then
	say "installing ovn-central for a real ovsdb-server"
	sudo=""
	if [[ $(id -u) -ne 0 ]]; then
		command -v sudo >/dev/null || { say "ovn-central is missing and this user cannot install it: run 'apt-get install ovn-central' as root"; exit 1; }
		sudo=sudo
	fi
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends ovn-central >/dev/null
fi

KUBEBUILDER_ASSETS="$(hack/kube-assets.sh)"
export KUBEBUILDER_ASSETS
say "envtest binaries: $KUBEBUILDER_ASSETS"

# Flags alone (hack/test.sh -count=1) still mean the whole suite.
packages=false
for arg in "$@"; do
	case "$arg" in
	. | ./* | ../* | all | github.com/*) packages=true ;;
	esac
done
if ! $packages; then
	set -- "$@" ./...
fi
exec go test -race -timeout 25m "$@"
