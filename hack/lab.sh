#!/usr/bin/env bash
# A lab on this machine: a tenant cluster's workers brought up by the real
# Cluster API, IPAM provider, capmox and Talos bootstrap provider against
# the Proxmox VE fake, and each tenant's Proxmox CCM and CSI controller as
# their rendered Deployments say (docs/cluster-api.md, "A lab on your
# machine").
#
#   hack/lab.sh up [--capmox v0.9|v0.7]   start it; prints KUBECONFIG=, PROXMOX_URL=,
#                                          PROXMOX_TOKEN_ID=, PROXMOX_TOKEN_SECRET_FILE=, PROXMOX_CA_FILE=
#   hack/lab.sh apply FILE...             apply a Kubernetes and its KubernetesNodes, and the
#                                          tenant's VPCs (what pxsubstrate render vpc reads)
#   hack/lab.sh status [--wait 5m]        the lab's processes and Machines with their addresses
#                                          (--wait: until they run)
#   hack/lab.sh env                       the lines up printed, for eval
#   hack/lab.sh down                      stop everything, by pid
#
# The lab lives in ${PXSUBSTRATE_LAB_DIR:-<cache>/lab}; its programs are
# built into <cache>/lab-bin, and kube-apiserver, etcd, the managers, the
# CCM, the CSI controller and its sidecars into <cache> as hack/test.sh
# builds them, where <cache> is
# ${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}
dir=${PXSUBSTRATE_LAB_DIR:-$cache/lab}
bin=$cache/lab-bin

build() {
	mkdir -p "$bin"
	go build -o "$bin/lab" ./hack/cmd/lab
	go build -o "$bin/pvelab" ./hack/cmd/pvelab
	go build -o "$bin/proxmox-network-controller" ./cmd/proxmox-network-controller
}

cmd=${1:-}
case $cmd in
up)
	shift
	KUBEBUILDER_ASSETS="$(hack/kube-assets.sh)"
	PXSUBSTRATE_CAPI_ASSETS="$(hack/capi-assets.sh)"
	PXSUBSTRATE_CCMCSI_ASSETS="$(hack/ccmcsi-assets.sh)"
	export KUBEBUILDER_ASSETS PXSUBSTRATE_CAPI_ASSETS PXSUBSTRATE_CCMCSI_ASSETS
	build
	exec "$bin/lab" up --dir "$dir" --proxmox-program "$bin/pvelab" \
		--controller "$bin/proxmox-network-controller" "$@"
	;;
apply | status | env | down)
	shift
	[[ -x $bin/lab ]] || build
	exec "$bin/lab" "$cmd" --dir "$dir" "$@"
	;;
*)
	echo "usage: hack/lab.sh up [--capmox v0.9|v0.7] | apply FILE... | status [--wait DURATION] | env | down" >&2
	exit 2
	;;
esac
