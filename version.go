package backwave

// Version is the release of BackWave this module is: the version the
// command-line tool prints, the OpenTelemetry bridge reports as its
// instrumentation version, and CHANGELOG.md and docs/releases.md name. It
// follows semantic versioning without the leading "v" of a Go module tag
// (the tag of this release is "v" + Version).
const Version = "0.1.0"
