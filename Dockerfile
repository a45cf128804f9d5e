# The controller's image for those who build with Docker:
#   docker build --build-arg VERSION=v0.1.0 --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(date -u -d @$(git log -1 --format=%ct) +%Y-%m-%dT%H:%M:%SZ) -t proxmox-network-controller .
# `make image` builds the same image (same user, entrypoint, labels and
# build flags) without Docker; hack/tools/imagebuild's tests keep the two
# in step.
FROM golang:1.26 AS build
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux GOARCH=${TARGETARCH} go build -trimpath -buildvcs=false \
    -ldflags "-s -w -buildid= -X github.com/pxsubstrate/pxsubstrate/internal/controller.Version=${VERSION}" \
    -o /out/proxmox-network-controller ./cmd/proxmox-network-controller

FROM scratch
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
COPY hack/image/rootfs/ /
COPY --from=build /out/proxmox-network-controller /proxmox-network-controller
LABEL org.opencontainers.image.title="proxmox-network-controller" \
      org.opencontainers.image.description="Allocates VLANs to ProxmoxNetworks, keeps their Kube-OVN Vlans and OVN gateways, and judges attachments" \
      org.opencontainers.image.source="https://github.com/pxsubstrate/pxsubstrate" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/proxmox-network-controller"]
