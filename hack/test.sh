#!/usr/bin/env bash
# The project's test command: installs what the tests need, then runs the
# whole suite with the race detector.
#
#   hack/test.sh [go test flags...] [packages]   e.g. hack/test.sh -run TestRunner ./engine/...
#
# Without packages it tests ./... (flags alone, like -count=1, included) and
# beside it the nested modules charts/ (Helm charts, alerts through promtool) and
# hack/tools/ (the image build), with the same flags.
#
# What it provides:
#   - a real ovsdb-server (Debian package ovn-central) and the OVN data plane
#     (ovn-host, openvswitch-switch, iproute2, iputils-ping, ethtool), installed with
#     apt-get when missing; the data-plane tests also need root;
#   - kube-apiserver and etcd for envtest, the kubectl the host-entries
#     test runs and the kube-controller-manager and kube-scheduler the lab
#     runs, built once from the Go module proxy into
#     ${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}
#     (about 8 minutes on 2 cores the first time, instant afterwards);
#   - the managers of Cluster API core, of the in-cluster IPAM provider, of
#     capmox (v0.9.0 and v0.7.2) and of the Talos bootstrap provider
#     (hack/capi-assets.sh), built once into the same cache folder, those
#     that share a Kubernetes minor release with each other or with the
#     CCM and CSI sidecars in one module (about 7 minutes for the five on
#     2 cores the first time);
#   - the Proxmox CCM v0.7.0, the Proxmox CSI controller v0.18.1 and the
#     CSI provisioner, attacher and resizer the lab runs as a tenant's
#     rendered Deployments say (hack/ccmcsi-assets.sh), built once into the
#     same cache folder (README.md records how long);
#   - Kube-OVN's kube-ovn-controller and kube-ovn-webhook v1.14.10
#     (hack/kubeovn-assets.sh), built once into the same cache folder
#     (about 2 minutes on 2 cores the first time);
#   - for the nested modules: promtool (hack/promtool.sh) and
#     prometheus-operator's CRDs (hack/prometheus-crds.sh), built once into
#     the same cache folder.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "test.sh: $*" >&2; }

# Debian packages the tests run: a real ovsdb-server (ovn-central) for the NB
# tests, and the whole OVN data plane (ovn-host, openvswitch-switch) with the
# tools the data-plane lab drives (iproute2, iputils-ping, ethtool).
need=()
have() { command -v "$1" >/dev/null || [[ -x /usr/sbin/$1 || -x /sbin/$1 ]]; }
have ovsdb-server && have ovn-northd && [[ -f /usr/share/ovn/ovn-nb.ovsschema ]] || need+=(ovn-central)
have ovn-controller || need+=(ovn-host)
have ovs-vswitchd && have ovs-vsctl && [[ -f /usr/share/openvswitch/vswitch.ovsschema ]] || need+=(openvswitch-switch)
have ip || need+=(iproute2)
have ping || need+=(iputils-ping)
have ethtool || need+=(ethtool)
if ((${#need[@]})); then
	say "installing ${need[*]}"
	sudo=""
	if [[ $(id -u) -ne 0 ]]; then
		command -v sudo >/dev/null || { say "${need[*]} missing and this user cannot install them: run 'apt-get install ${need[*]}' as root"; exit 1; }
		sudo=sudo
	fi
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# While the programs of the cache build (on a first run: a few dozen
# minutes, their downloads leaving the cores idle at times), the main
# module's packages and their tests compile beside them at the lowest
# priority, with the compiler flags go test uses below, into the same
# build cache: go test then finds them compiled. It stops as soon as the
# programs are built; what it has not compiled go test compiles. On a
# machine whose programs are built it runs for a second.
setsid nice -n 19 go list -race -gcflags=all=-dwarf=false -export -test -deps ./... >/dev/null 2>&1 &
precompile=$!
stop_precompile() { kill -- "-$precompile" 2>/dev/null || true; wait "$precompile" 2>/dev/null || true; }
trap stop_precompile EXIT

KUBEBUILDER_ASSETS="$(hack/kube-assets.sh)"
export KUBEBUILDER_ASSETS
say "envtest binaries: $KUBEBUILDER_ASSETS"
PXSUBSTRATE_CAPI_ASSETS="$(hack/capi-assets.sh)"
export PXSUBSTRATE_CAPI_ASSETS
say "Cluster API and provider managers: $PXSUBSTRATE_CAPI_ASSETS"
PXSUBSTRATE_CCMCSI_ASSETS="$(hack/ccmcsi-assets.sh)"
export PXSUBSTRATE_CCMCSI_ASSETS
say "Proxmox CCM, CSI controller and CSI sidecars: $PXSUBSTRATE_CCMCSI_ASSETS"
PXSUBSTRATE_KUBEOVN_ASSETS="$(hack/kubeovn-assets.sh)"
export PXSUBSTRATE_KUBEOVN_ASSETS
say "Kube-OVN controller and webhook: $PXSUBSTRATE_KUBEOVN_ASSETS"

# Every test binary is compiled without DWARF debug information
# (-gcflags=all=-dwarf=false: 12 % less compiler CPU for client-go and
# controller-runtime from an empty build cache) and linked without its
# symbol table (-s -w): a stack trace or a race report still names every
# function and line, and a -race link takes half the time. The timeout is
# per package: internal/testenv/lab's tests start a whole lab each (two at
# a time on two cores, each capmox in a network namespace of its own), and
# take the longest: in CI's 71-minute run of 7d88a99 on a loaded machine
# the main module's packages took about an hour, and 75 minutes still
# leaves the nested modules' ten within CI's 90. Three test binaries
# run at once on two cores (-p 3): the slow packages wait on the programs
# they start as much as they compute; a warm run took 22.5 minutes so,
# against 27.5 with two at a time (docs/performance.md).
common=(-race -timeout 75m -gcflags=all=-dwarf=false "-ldflags=-s -w")
flags=("${common[@]}" -p 3)

# Every Go program of the run (the compiler, the test binaries and the
# kube-apiserver, etcd and managers they start) collects garbage when its
# heap has grown fourfold rather than doubled: the run is CPU-bound on two
# cores, and a lab's programs used 9 % less CPU so; a whole run's memory
# stayed under half the machine's (docs/performance.md has both). GOGC
# from the caller's environment wins.
export GOGC="${GOGC:-400}"

# A -race binary sleeps a second as it exits, for threads still writing a
# report: a test binary's races are reported while its tests run, and the
# second was spent on each of the run's test binaries and on every child a
# test starts from its own binary. GORACE from the caller's environment wins.
export GORACE="${GORACE:-atexit_sleep_ms=0}"

# Flags alone (hack/test.sh -count=1) still mean the whole suite.
packages=false
for arg in "$@"; do
	case "$arg" in
	. | ./* | ../* | all | github.com/*) packages=true ;;
	esac
done
if $packages; then
	stop_precompile
	exec go test "${flags[@]}" "$@"
fi

# The slowest packages first: go test starts its test binaries in the order
# of its package list (each package once), two at a time on two cores, so a
# slow one listed late runs alone at the end while the other core idles.
#
# The nested modules are tested beside the main module, one after the
# other, with one test binary at a time: alone at the end they left a core
# idle while Helm's SDK linked and each module's few tests ran. Their
# output is held back and printed after the main module's.
slowest=(./internal/testenv/lab ./internal/testenv/kubeovn ./internal/cli ./e2e ./capmoxrender/capitest)
PXSUBSTRATE_PROMTOOL="$(hack/promtool.sh)"
PXSUBSTRATE_PROMETHEUS_CRDS="$(hack/prometheus-crds.sh)"
export PXSUBSTRATE_PROMTOOL PXSUBSTRATE_PROMETHEUS_CRDS
stop_precompile
nested_log="$(mktemp "${TMPDIR:-/tmp}/pxsubstrate-nested.XXXXXX")"
trap 'rm -f "$nested_log"' EXIT
(
	status=0
	for module in charts hack/tools; do
		echo "test.sh: testing the nested module $module"
		(cd "$module" && GOWORK=off go test "${common[@]}" -p 1 "$@" ./...) || status=1
	done
	exit "$status"
) >"$nested_log" 2>&1 &
nested=$!
status=0
go test "${flags[@]}" "$@" "${slowest[@]}" ./... || status=1
wait "$nested" || status=1
cat "$nested_log"
exit "$status"
