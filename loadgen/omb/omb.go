// Package omb gives a loadgen run's figures in OpenMessaging Benchmark's
// (OMB's) forms: its aggregated headline lines (Report) and its JSON
// result file (TestResult), so a Samsa run driven by an OMB workload file
// (loadgen.OMBWorkload) can be read beside published OMB results and fed
// to OMB's own chart tools.
package omb
