#!/usr/bin/env bash
# Builds promtool (github.com/prometheus/prometheus/cmd/promtool) from the
# Go module proxy into a cache folder outside the checkout, once, and
# prints its path.
#
# Environment:
#   PXSUBSTRATE_CACHE    cache root [${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate]
#   PROMETHEUS_VERSION   module version [v0.316.0]
set -euo pipefail

PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
CACHE="${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}"
OUT="$CACHE/promtool/$PROMETHEUS_VERSION"

if [[ -x "$OUT/promtool" ]] && "$OUT/promtool" --version >/dev/null 2>&1; then
	echo "$OUT/promtool"
	exit 0
fi
echo "promtool: building promtool $PROMETHEUS_VERSION into $OUT (once; several minutes)" >&2
mkdir -p "$OUT"
GOBIN="$OUT" CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod go install -gcflags=all=-dwarf=false -ldflags "-s -w" \
	"github.com/prometheus/prometheus/cmd/promtool@${PROMETHEUS_VERSION}" >&2
echo "$OUT/promtool"
