package main

import (
	"os"
	"runtime"
)

// minBrokerProcs is the least GOMAXPROCS a process running a broker gets.
//
// While Go's garbage collector marks, it gives whole Ps to dedicated mark
// workers: a quarter of GOMAXPROCS, rounded to the nearest integer. On a
// 2-CPU machine that is one of two Ps, so every mark phase (several a
// second at broker allocation rates) halves the Ps the broker, its
// clients and the load generator have, and runnable goroutines queue
// behind it. With 4 Ps the worker takes one of four and the kernel shares
// the two CPUs among the threads. Measured here (2 vCPUs, the
// consume-pull-vs-longpoll experiment, --quick, two runs each): long-poll
// e2e p99 5.94 ms at GOMAXPROCS=2 against 2.71 and 2.98 ms at 4, send p99
// 4.60 against 1.97 and 2.01 ms.
const minBrokerProcs = 4

// brokerProcs raises GOMAXPROCS to minBrokerProcs for commands that run a
// broker (broker, dev, loadgen with an embedded cluster), unless the user
// set GOMAXPROCS. It returns the value in force.
func brokerProcs() int {
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < minBrokerProcs {
		runtime.GOMAXPROCS(minBrokerProcs)
	}
	return runtime.GOMAXPROCS(0)
}
