# syntax=docker/dockerfile:1
#
# Barometer's image: a static binary on distroless, running as non-root.
#
#   docker build -t barometer:dev --build-arg VERSION=$(git describe --always) .
#   docker build -t barometer-demo-workload:dev --target demo-workload .
#
# For a machine that reaches no registry (no base image to pull),
# .ci/image.sh builds the same static binary onto an empty root with umoci
# and runs it with crun or runc; see the README, "Deploy".
#
# The default (last) stage is the scaler. Only the main module is needed to
# build it; .dockerignore keeps the rest of the tree out of the context.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# Dependencies first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/barometer ./cmd/scaler \
 && CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/demo-workload ./examples/demo-workload

# The demo workload of examples/kubernetes/demo-workload.yaml (not the default).
FROM gcr.io/distroless/static-debian12:nonroot AS demo-workload
COPY --from=build /out/demo-workload /demo-workload
USER nonroot:nonroot
EXPOSE 9100
ENTRYPOINT ["/demo-workload", "-listen", ":9100"]

# The scaler: gRPC (KEDA's ExternalScaler) on 6000, HTTP on 8080.
FROM gcr.io/distroless/static-debian12:nonroot AS scaler
COPY --from=build /out/barometer /barometer
USER nonroot:nonroot
EXPOSE 6000 8080
ENTRYPOINT ["/barometer"]
CMD ["serve"]
