// Package nodejs holds the compatibility test with RocketMQ 5's official
// Node.js client (rocketmq-client-nodejs, pinned by package-lock.json):
// compat_test.go installs it once with npm ci into the user's cache
// directory, starts an in-process cluster with a gRPC proxy (package
// proxy) and runs the scenarios of scenarios.js against it. Without node
// or npm, or when npm ci cannot reach its registry, the test skips and
// says why.
package nodejs
