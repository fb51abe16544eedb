// Package packaging holds how picker is shipped — the systemd unit
// (packaging/systemd/picker.service) and the container image's config
// (packaging/docker/config.toml) — and the tests that hold the Dockerfile, the
// GoReleaser config and the unit to what the README and CONTRACT promise. It has no
// code of its own.
package packaging
