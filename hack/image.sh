#!/usr/bin/env bash
# Builds the controller's OCI image index (linux/amd64 and linux/arm64)
# without a container daemon or a registry: static binaries from go build,
# assembled by hack/tools/imagebuild (go-containerregistry) into an OCI
# image layout. The same inputs give the same digest.
#
#   hack/image.sh [OUT]          OUT: the layout folder [bin/image]; replaced
#
# Environment:
#   VERSION             org.opencontainers.image.version [git describe --tags --always --dirty]
#   REVISION            org.opencontainers.image.revision [git rev-parse HEAD]
#   SOURCE_DATE_EPOCH   time of every file and of the image [the commit's time]
#
# Load the result with e.g. `skopeo copy oci:bin/image docker://REGISTRY/proxmox-network-controller:TAG`
# or `crane push bin/image REGISTRY/proxmox-network-controller:TAG`.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
out="${1:-bin/image}"
case "$out" in /*) ;; *) out="$root/$out" ;; esac

say() { echo "image: $*" >&2; }

VERSION="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
REVISION="${REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"

bins="$(mktemp -d "${TMPDIR:-/tmp}/pxsubstrate-image.XXXXXX")"
trap 'rm -rf "$bins"' EXIT
args=()
for arch in amd64 arm64; do
	say "building linux/$arch"
	CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -buildvcs=false \
		-ldflags "-s -w -buildid= -X github.com/pxsubstrate/pxsubstrate/internal/controller.Version=$VERSION" \
		-o "$bins/$arch/proxmox-network-controller" ./cmd/proxmox-network-controller
	args+=(--binary "$arch=$bins/$arch/proxmox-network-controller")
done
rm -rf "$out"
mkdir -p "$(dirname "$out")"
digest="$(cd hack/tools && GOWORK=off go run ./imagebuild --out "$out" --rootfs "$root/hack/image/rootfs" \
	--version "$VERSION" --revision "$REVISION" --created "$SOURCE_DATE_EPOCH" "${args[@]}")"
say "wrote $out ($digest)"
echo "$digest"
