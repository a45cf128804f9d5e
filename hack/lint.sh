#!/usr/bin/env bash
# Runs golangci-lint at the version pinned in hack/lint/go.mod, with the
# project's .golangci.yml. The linter is built once into the cache folder
# outside the checkout and reused.
#
#   hack/lint.sh [golangci-lint run flags...]     e.g. hack/lint.sh ./vlanalloc/...
#
# Environment:
#   PXSUBSTRATE_CACHE  cache root [${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate]
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "lint: $*" >&2; }

version="$(awk '$1 == "github.com/golangci/golangci-lint/v2" { print $2; exit }' hack/lint/go.mod)"
[[ -n "$version" ]] || { say "hack/lint/go.mod does not require github.com/golangci/golangci-lint/v2"; exit 1; }
CACHE="${PXSUBSTRATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pxsubstrate}"
bin="$CACHE/tools/golangci-lint-$version"

have="$([[ -x "$bin" ]] && "$bin" version 2>/dev/null || true)"
if [[ "$have" != *"version ${version#v} "* ]]; then
	say "building golangci-lint $version into $bin (once)"
	mkdir -p "$(dirname "$bin")"
	(cd hack/lint && GOWORK=off go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "$bin.new" github.com/golangci/golangci-lint/v2/cmd/golangci-lint)
	mv "$bin.new" "$bin"
fi

if [[ $# -eq 0 ]]; then
	set -- ./...
fi
# Two checkouts on one machine share the linter's cache: the second waits.
exec "$bin" run --allow-serial-runners "$@"
