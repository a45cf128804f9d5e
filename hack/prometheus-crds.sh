#!/usr/bin/env bash
# Generates prometheus-operator's monitoring.coreos.com CRDs (the chart's
# PrometheusRule among them) from the Go types of its module
# github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring,
# with controller-gen, into a cache folder outside the checkout, and prints
# the folder. The module proxy serves that module but not the one holding
# the project's published CRD files. A second run only prints the folder.
#
# Environment:
#   PXSUBSTRATE_CACHE            cache root [${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate]
#   PROMETHEUS_OPERATOR_VERSION  [v0.95.2]
#   CONTROLLER_GEN_VERSION       [v0.23.0]
set -euo pipefail

PROMETHEUS_OPERATOR_VERSION="${PROMETHEUS_OPERATOR_VERSION:-v0.95.2}"
CONTROLLER_GEN_VERSION="${CONTROLLER_GEN_VERSION:-v0.23.0}"
CACHE="${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}"
OUT="$CACHE/crds/prometheus-operator-${PROMETHEUS_OPERATOR_VERSION}"

if [[ -f "$OUT/monitoring.coreos.com_prometheusrules.yaml" ]]; then
	echo "$OUT"
	exit 0
fi
echo "prometheus-crds: generating the monitoring.coreos.com CRDs of $PROMETHEUS_OPERATOR_VERSION into $OUT (once)" >&2
scratch="$(mktemp -d "${TMPDIR:-/tmp}/pxsubstrate-pocrd.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
pkg=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring
printf 'module scratch/pocrd\n\ngo 1.26.0\n\nrequire %s %s\n' "$pkg" "$PROMETHEUS_OPERATOR_VERSION" >"$scratch/go.mod"
printf 'package pocrd\n\nimport _ "%s/v1"\n' "$pkg" >"$scratch/pocrd.go"
export GOWORK=off GOFLAGS=-mod=mod
(
	cd "$scratch"
	go mod tidy >/dev/null 2>&1
	go run "sigs.k8s.io/controller-tools/cmd/controller-gen@${CONTROLLER_GEN_VERSION}" \
		crd:crdVersions=v1,allowDangerousTypes=true "paths=$pkg/v1" "output:crd:dir=$scratch/out" >&2
)
mkdir -p "$OUT"
cp "$scratch"/out/*.yaml "$OUT/"
echo "$OUT"
