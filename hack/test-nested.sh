#!/usr/bin/env bash
# Tests the nested Go modules (charts/, hack/tools/), which hack/test.sh does
# not run yet: they build promtool and the PrometheusRule CRD into the cache
# folder first, and need the envtest binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
KUBEBUILDER_ASSETS="$(hack/kube-assets.sh)"
PXSUBSTRATE_PROMTOOL="$(hack/promtool.sh)"
PXSUBSTRATE_PROMETHEUS_CRDS="$(hack/prometheus-crds.sh)"
export KUBEBUILDER_ASSETS PXSUBSTRATE_PROMTOOL PXSUBSTRATE_PROMETHEUS_CRDS
status=0
for module in charts hack/tools; do
	echo "test-nested.sh: testing the nested module $module" >&2
	(cd "$module" && GOWORK=off go test -race -timeout 25m "$@" ./...) || status=1
done
exit "$status"
