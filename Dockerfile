# syntax=docker/dockerfile:1
# picker's daemon in a container: static binaries (CGO_ENABLED=0; modernc.org/sqlite is
# pure Go) on distroless/static (CA certificates, tzdata, no shell), as a non-root user.
#
#   docker build -t picker .
#   docker run -d -p 8080:8080 -e PICKER_TOKEN="$(openssl rand -hex 32)" -v picker-data:/data picker
#
# The daemon listens on 0.0.0.0:8080 (packaging/docker/config.toml), which needs the
# bearer token in PICKER_TOKEN: every request but /healthz sends
# "Authorization: Bearer $PICKER_TOKEN". The database is /data/picker/picker.db.
# Release builds pass --build-arg VERSION=v1.2.3 COMMIT=$(git rev-parse HEAD)
# DATE=$(git log -1 --format=%cI) (.git is not in the build context: without them the
# version is (devel) and no commit is shown).

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
ARG COMMIT=""
ARG DATE=""
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -o /out/ \
      -ldflags "-s -w \
        -X github.com/pickergpu/picker/buildinfo.Version=${VERSION} \
        -X github.com/pickergpu/picker/buildinfo.Commit=${COMMIT} \
        -X github.com/pickergpu/picker/buildinfo.Date=${DATE}" \
      ./cmd/picker ./cmd/picker-fetch \
 && mkdir -p /data/picker

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/picker /out/picker-fetch /usr/local/bin/
COPY packaging/docker/config.toml /etc/picker/config.toml
COPY --from=build --chown=65532:65532 /data /data
ENV XDG_DATA_HOME=/data \
    XDG_CACHE_HOME=/data/cache \
    PICKER_CONFIG=/etc/picker/config.toml \
    PICKER_LOG_FORMAT=json
VOLUME ["/data"]
EXPOSE 8080
USER 65532:65532
# No curl in distroless: picker asks its own /healthz (no token needed).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/picker", "healthcheck", "--timeout", "4s"]
ENTRYPOINT ["/usr/local/bin/picker", "daemon"]
