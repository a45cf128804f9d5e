#!/usr/bin/env bash
# Generates the deep-copy functions of api/v1alpha1, api/kubeovn and api/ipam and the
# CRD manifests of our own group into config/crd/bases (and the templates of
# charts/proxmox-network-crds), with controller-gen.
# Then it rewrites the admission policies' golden file and the admission
# manifests generated from the admission package (charts/proxmox-network's
# admission templates, config/policies, config/webhook) with their tests'
# -update flags; in --check mode those tests themselves fail when stale.
#
#   hack/generate.sh           regenerate in place
#   hack/generate.sh --check   exit 1 when the committed files are stale
#
# The Kube-OVN and IPAM mirrors get deep copies only: their CRDs are the
# upstream ones, never generated here.
set -euo pipefail
cd "$(dirname "$0")/.."

CONTROLLER_GEN_VERSION="${CONTROLLER_GEN_VERSION:-v0.23.0}"
controller_gen() { go run "sigs.k8s.io/controller-tools/cmd/controller-gen@${CONTROLLER_GEN_VERSION}" "$@"; }

generate() { # $1: module root to generate in
	(
		cd "$1"
		controller_gen object paths=./api/v1alpha1/... paths=./api/kubeovn/... paths=./api/ipam/...
		controller_gen crd:crdVersions=v1 paths=./api/v1alpha1/... output:crd:artifacts:config=config/crd/bases
	)
}

if [[ "${1:-}" != "--check" ]]; then
	generate .
	# The CRDs chart carries the same files (its tests compare them).
	rm -f charts/proxmox-network-crds/templates/*.yaml
	cp config/crd/bases/*.yaml charts/proxmox-network-crds/templates/
	go test ./admission -run '^TestPoliciesGolden$' -update >/dev/null
	go test ./internal/controller -run '^TestGeneratedManifests$' -update >/dev/null
	exit 0
fi

scratch="$(mktemp -d "${TMPDIR:-/tmp}/pxsubstrate-generate.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
cp go.mod go.sum "$scratch/"
cp -r api "$scratch/api"
mkdir -p "$scratch/config/crd/bases"
generate "$scratch"
stale=0
for f in $(cd "$scratch" && find api config/crd/bases -name 'zz_generated.*.go' -o -name '*.yaml' | sort); do
	if ! cmp -s "$f" "$scratch/$f"; then
		echo "generate: $f is stale; run hack/generate.sh" >&2
		stale=1
	fi
done
for f in $(find config/crd/bases -name '*.yaml' | sort); do
	[[ -f "$scratch/$f" ]] || { echo "generate: $f is no longer generated; delete it" >&2; stale=1; }
done
exit "$stale"
