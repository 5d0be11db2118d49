# Builds the operator image: `make docker-build IMG=...`.
FROM docker.io/library/golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=v0.0.0-dev
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY api/ api/
COPY internal/ internal/
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-X github.com/kubevirt/virt-advisor-operator/internal/version.Version=${VERSION}" \
    -o manager ./cmd

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
USER 65532:65532
ENTRYPOINT ["/manager"]
