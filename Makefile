# Samsa. Two commands set everything up on a fresh machine:
#   make bench   the lab's main job on an embedded cluster (results/, PERFORMANCE.md)
#   make test    lint (vet, gofmt, staticcheck, golangci-lint, go mod tidy) + tests (storage, broker, ha and controller with -race)
#   make perf-gate  HEAD's binary against HEAD~1's, A/B; fails on a confident regression (CI runs it after make test)
#   make sim     the simulator over SIM_SEEDS seeds (faults on a seeded schedule, virtual time)
GO        ?= go
BIN       := bin/samsa
# Packages run under the race detector (storage, broker, replication and the
# fail-over controller, as CI requires);
# every other package runs without it.
RACE_DIRS := storage broker ha controller
RACE_PKGS  = $$(for d in $(RACE_DIRS); do [ -d $$d ] && $(GO) list ./$$d/...; done)
REST_PKGS  = $$($(GO) list ./... | grep -v $(foreach d,$(RACE_DIRS),-e /samsa/$(d)))
BENCH_DIR ?= $(CURDIR)/.benchdata

.PHONY: all build test vet lint fmt-check staticcheck tidy-check golangci test-race test-rest fuzz perf-gate bench bench-full sim clean proto

all: build

build:
	$(GO) build -o $(BIN) ./cmd/samsa

vet:
	$(GO) vet ./...

# RocketMQ 5's gRPC protocol (package proxy/rmqpb): regenerate the Go code
# from proxy/rmqpb/proto with protoc (Debian: protobuf-compiler) and the two
# plugins at the versions pinned here, installed from the module proxy into
# $(GOBIN). The output is committed; a build never needs protoc.
PROTOC_GEN_GO      ?= google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC ?= google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
proto:
	@command -v protoc >/dev/null 2>&1 || { echo "make proto: protoc not found (apt-get install protobuf-compiler)"; exit 1; }
	$(GO) install $(PROTOC_GEN_GO)
	$(GO) install $(PROTOC_GEN_GO_GRPC)
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" protoc -I proxy/rmqpb/proto \
	  --go_out=. --go_opt=module=github.com/samsamq/samsa \
	  --go-grpc_out=. --go-grpc_opt=module=github.com/samsamq/samsa \
	  proxy/rmqpb/proto/apache/rocketmq/v2/definition.proto proxy/rmqpb/proto/apache/rocketmq/v2/service.proto

# Lint: go vet, gofmt, staticcheck and golangci-lint (both pinned; `go run
# pkg@version` fetches them from the module proxy into the module cache,
# outside go.mod's graph; checks in staticcheck.conf and .golangci.yml) and
# a go.mod/go.sum that `go mod tidy` would leave as they are.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint: vet fmt-check staticcheck golangci tidy-check

staticcheck:
	$(GO) run $(STATICCHECK) ./...

# golangci-lint (pinned; .golangci.yml: errcheck outside tests,
# ineffassign), part of lint. An error dropped on purpose is written
# `_ = f()` with the reason beside it when not obvious. The first run
# builds the linter (about 5 minutes on 2 cores); later runs use the cache.
GOLANGCI_LINT ?= github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
golangci:
	$(GO) run $(GOLANGCI_LINT) run ./...

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "not gofmt-ed (run gofmt -w):"; echo "$$out"; exit 1; fi

tidy-check:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

# Race-checked packages first, then everything else without -race, then
# the race-checked packages' zero-allocation tests (the race detector
# allocates, so they skip under it) without -race, then the Python MetaQ
# client's tests against `samsa dev` (skipped where python3 is missing); the
# second step runs even when the first fails, and the target fails if
# either did, so one failing package never hides the others. The built
# binary is handed to the tests that run real processes (the kill loop's
# smoke test in loadgen/durability).
test: lint build
	@rc=0; \
	$(GO) test -race -count=1 -timeout 12m $(RACE_PKGS) || rc=1; \
	SAMSA_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 12m $(REST_PKGS) || rc=1; \
	$(GO) test -count=1 -timeout 5m -run 'ZeroAllocs' $(RACE_PKGS) || rc=1; \
	if command -v python3 >/dev/null 2>&1; then \
	  SAMSA_BIN=$(CURDIR)/$(BIN) python3 -m unittest discover -s clients/python || rc=1; \
	else echo "make test: python3 not found; skipping the Python client's tests (clients/python)"; fi; \
	if [ $$rc -ne 0 ]; then echo "make test: FAILED (see above)"; fi; exit $$rc

# The simulator (package sim) over many seeds, faults on a seeded
# schedule, virtual time: replication (a master and a slave, static roles)
# and fail-over (a group of three in controller mode with a three-replica
# controller on hashicorp/raft; every fault one at a time, and the
# whole-group crash family). make test runs 8 seeds per flush policy of the
# first and 4 of each fail-over family; SIM_SEEDS here, per test and flush
# policy (a failure prints its seed: SAMSA_SIM_SEED=N replays it). About
# 20,000 fail-over runs an hour on this machine (2 cores, shared).
SIM_SEEDS ?= 1000
sim:
	SAMSA_SIM_SEEDS=$(SIM_SEEDS) $(GO) test -count=1 -timeout 600m -run '^(TestReplication|TestFailover|TestFailoverGroupCrash)$$' ./sim/

# Short fuzz runs of every fuzz target (FUZZTIME each). The budget is a
# count of executions (Nx), not a duration: a duration races Go 1.26's fuzz
# coordinator at its deadline (golang/go#75804, fixed in 1.27) and fails a
# target with "context deadline exceeded" and no input. CI runs it with
# FUZZTIME=20000x after make test.
FUZZTIME ?= 200000x
fuzz:
	@for spec in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -h '^func Fuzz' $$spec/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    echo "fuzz $$spec $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$spec || exit 1; \
	  done; done

# The performance gate (samsa bench gate; README "Performance gate"):
# PERF_BASE (default HEAD~1) is built in a temporary git worktree under
# $(BENCH_DIR)/gate and measured against HEAD's binary (this checkout's
# build) in alternated A-B-B-A rounds on three cells: storage pwrite async
# with 1 writer, storage sync with 64 writers, and loadgen's e2e produce
# path on an embedded cluster. It prints a table (cell, median B/A, its
# 95% bootstrap interval, rounds, verdict) and fails only when a cell's
# whole interval is below 0.90x, unless a "Perf-Accept: CELL: REASON"
# trailer in HEAD's commit message (any commit after PERF_BASE) accepts
# it. No base to build (shallow clone, first commit): it says so and
# passes. About 5 minutes on a 2-core machine. PERF_FLAGS adds flags
# (--rounds N, --threshold X, --json FILE).
PERF_BASE  ?= HEAD~1
PERF_FLAGS ?=
perf-gate: build
	$(BIN) bench gate --base $(PERF_BASE) --head-bin $(BIN) --go $(GO) --dir $(BENCH_DIR)/gate $(PERF_FLAGS)

# The lab. Each experiment runs in-process on a data dir on the repo's disk;
# storage experiments ("kind": "storage") run with `samsa bench run`, others
# as `$(BENCH_E2E_RUN) FILE` when it is set (the end-to-end runner hooks in
# there; a result path it appends to $(BENCH_DIR)/results.list is rendered
# too: `bench report` takes loadgen's e2e results as well). Every result is
# rendered into PERFORMANCE.md's generated sections;
# storage-quick results are checked against the committed baseline: a
# regression is printed, and fails the target only with BENCH_GATE=1.
# BENCH_FLAGS passes flags to every run (e.g. BENCH_FLAGS=--quick).
# End-to-end experiments ("kind": "e2e") run with samsa loadgen on an
# embedded cluster per run; make bench runs their quick form. The
# durability-kill experiment goes the same way, with real name server and
# broker processes killed (3 kills per cell quick, 50 in bench-full).
# Two OpenMessaging Benchmark workloads (workloads/) run as they are
# against Samsa and NATS, their durations shortened (about a minute).
BENCH_E2E_EXPERIMENTS     ?= experiments/consume-pull-vs-longpoll.json experiments/flush-e2e.json \
                             experiments/group-commit-e2e.json experiments/peer-nats.json \
                             experiments/omb-1-topic-16-partitions-1kb.json experiments/omb-1-topic-1-partition-100b.json \
                             experiments/client-vs-official.json experiments/durability-kill.json
BENCH_EXPERIMENTS         ?= experiments/storage-quick.json $(BENCH_E2E_EXPERIMENTS)
BENCH_STORAGE_EXPERIMENTS ?= experiments/storage-quick.json
# storage-uring-matrix (bench-full only, about 12 minutes): pwrite, odirect
# and uring from 128 B to 1 MiB messages, 1 to 64 writers, sync and async,
# each configuration's backends back to back ("interleave").
BENCH_FULL_EXPERIMENTS    ?= experiments/storage-quick.json experiments/storage-backends.json \
                             experiments/group-commit.json experiments/flush-policies.json \
                             experiments/storage-uring-matrix.json \
                             $(BENCH_E2E_EXPERIMENTS)
# The replication experiments: no slave, ASYNC_MASTER and
# SYNC_MASTER end to end (a delayed master→slave link included), and an
# empty slave's catch-up rate against the raw disk; replication-target
# repeats the two 64-producer cells the replication targets name five times
# for a median. Their quick form adds about 5 minutes to make bench;
# bench-full runs the full matrices.
BENCH_REPLICATION_EXPERIMENTS ?= experiments/replication-e2e.json experiments/replication-target.json experiments/replication-catchup.json
BENCH_EXPERIMENTS      += $(BENCH_REPLICATION_EXPERIMENTS)
BENCH_FULL_EXPERIMENTS += $(BENCH_REPLICATION_EXPERIMENTS)
BENCH_BASELINE  ?= results/baseline/storage-quick.json
BENCH_TOLERANCE ?= 0.15
BENCH_GATE      ?= 0
BENCH_FLAGS     ?=
BENCH_E2E_FLAGS ?= --quick
BENCH_E2E_RUN   ?= $(BIN) loadgen --dir $(BENCH_DIR)/e2e --out results --performance PERFORMANCE.md $(BENCH_E2E_FLAGS) --experiment

# Queue-count scaling and the cold-read backlog drain: quick
# forms in make bench (Samsa at 1 and 10,000 queues, about 40 s; a 1 GiB
# backlog, about a minute; the same drain paced at 125 MB/s from a 512 MiB
# backlog, about 30 s), full forms (every peer at 1 to 10,000 queues;
# a 4 GiB backlog, 3 repeats; 2 GiB paced) in make bench-full.
# Their targets (10,000 queues >= 0.8x 1 queue; drain >= 0.8x raw read,
# p99 during <= 2x before) are the gate's: with BENCH_GATE=1 a miss fails
# the target (loadgen --gate), else the tables mark it.
BENCH_SCALE_EXPERIMENTS ?= experiments/queues-scaling.json experiments/backlog-drain.json experiments/backlog-drain-paced.json
BENCH_EXPERIMENTS      += $(BENCH_SCALE_EXPERIMENTS)
# Metadata at scale: topics created one a request from 16 clients, the
# rate every 10,000, registration bytes a topic, route lookups, a broker
# restart; quick form (100,000 topics, a few minutes) in make bench, a
# million in bench-full.
BENCH_METADATA_EXPERIMENTS ?= experiments/metadata-scale.json
BENCH_EXPERIMENTS      += $(BENCH_METADATA_EXPERIMENTS)
BENCH_FULL_EXPERIMENTS += $(BENCH_METADATA_EXPERIMENTS)
BENCH_FULL_EXPERIMENTS += $(BENCH_SCALE_EXPERIMENTS)
BENCH_GATE_TARGETS     ?= $(BENCH_SCALE_EXPERIMENTS)

# The read path: the backlog drained with pulls from the files (sendfile)
# and from memory (transferMsgByHeap), over 1, 8 and 64 queues, cold and
# warm, beside the loopback ceiling, with CPU per GiB. Quick form in make
# bench (a 256 MiB backlog a cell, about two minutes), 2 GiB and 3
# repeats a cell in make bench-full. Not gated: its CPU target is the
# broker's, which this embedded lab measures together with the consumers'.
BENCH_READ_EXPERIMENTS ?= experiments/read-path.json
BENCH_EXPERIMENTS      += $(BENCH_READ_EXPERIMENTS)
BENCH_FULL_EXPERIMENTS += $(BENCH_READ_EXPERIMENTS)

# The fail-over chaos run: 3 controllers, a name server and 3
# controller-mode replicas as processes, 100 fault cycles; bench-full only
# (make test runs a short one, loadgen/chaos TestShortChaos).
BENCH_FULL_EXPERIMENTS += experiments/chaos.json

# The replication kill loop runs the same way, after the other
# e2e experiments: a master and a slave as real processes, the master
# SIGKILLed under load and the slave's copy read after each kill. make
# bench runs its quick form (async flush, 5 kills a cell, about a minute),
# bench-full 50 kills a cell and sync flush too. Its smoke (SYNC_MASTER,
# one kill) runs in make test beside the kill loop's.
# BENCH_REPL_EXPERIMENTS= leaves it out.
BENCH_REPL_EXPERIMENTS ?= experiments/replication-durability.json
BENCH_E2E_EXPERIMENTS  += $(BENCH_REPL_EXPERIMENTS)

# The peers: Redis and RabbitMQ beside Samsa, each server
# started by the loadgen on loopback in a temp dir. make bench and
# bench-full run the peer experiments whose server is installed and say in
# one line how to install the others; make bench-peers installs them with
# apt-get (sudo -n when not root; it never fails the build when it cannot)
# and runs the peer experiments (quick form unless BENCH_E2E_FLAGS=).
BENCH_PEERS      ?= redis rabbitmq
peer_found        = $(shell PATH="$$PATH:/usr/sbin:/usr/local/sbin" command -v $(1)-server 2>/dev/null)
BENCH_PEER_EXPERIMENTS = $(foreach p,$(BENCH_PEERS),$(if $(call peer_found,$(p)),experiments/peer-$(p).json))
BENCH_EXPERIMENTS      += $(BENCH_PEER_EXPERIMENTS)
BENCH_FULL_EXPERIMENTS += $(BENCH_PEER_EXPERIMENTS)
define peer_notice
	@for p in $(BENCH_PEERS); do PATH="$$PATH:/usr/sbin:/usr/local/sbin" command -v $$p-server >/dev/null 2>&1 || \
	  echo "bench: $$p-server is not installed, experiments/peer-$$p.json skipped: sudo apt-get install -y $$p-server (or make bench-peers)"; done
endef

# $(call bench_run,experiment files)
define bench_run
	@set -e; mkdir -p $(BENCH_DIR); : > $(BENCH_DIR)/results.list; \
	for e in $(1); do \
	  if grep -q '"kind": *"storage"' $$e; then \
	    $(BIN) bench run $$e --dir $(BENCH_DIR) --out results --last $(BENCH_DIR)/last $(BENCH_FLAGS); \
	    cat $(BENCH_DIR)/last >> $(BENCH_DIR)/results.list; \
	  elif [ -n "$(BENCH_E2E_RUN)" ]; then gate=""; \
	    case " $(BENCH_GATE_TARGETS) " in *" $$e "*) if [ "$(BENCH_GATE)" = 1 ]; then gate=--gate; fi;; esac; \
	    $(BENCH_E2E_RUN) $$e $$gate; \
	  else echo "bench: $$e is not a storage experiment and BENCH_E2E_RUN is not set: skipped"; fi; \
	done; \
	res=$$(cat $(BENCH_DIR)/results.list); \
	if [ -n "$$res" ]; then $(BIN) bench report $$res --out PERFORMANCE.md; fi; \
	for r in $$res; do case $$r in */storage-quick/*) \
	  if [ ! -f $(BENCH_BASELINE) ]; then echo "bench: no baseline $(BENCH_BASELINE)"; \
	  elif $(BIN) bench check --baseline $(BENCH_BASELINE) --tolerance $(BENCH_TOLERANCE) $$r; then :; \
	  elif [ "$(BENCH_GATE)" = 1 ]; then exit 1; \
	  else echo "bench: regression noted above (BENCH_GATE=1 makes it fail the build)"; fi;; \
	esac; done
endef

.PHONY: bench-storage

bench: build
	$(peer_notice)
	$(call bench_run,$(BENCH_EXPERIMENTS))

bench-storage: build
	$(call bench_run,$(BENCH_STORAGE_EXPERIMENTS))

bench-full: BENCH_E2E_FLAGS =
bench-full: build
	$(peer_notice)
	$(call bench_run,$(BENCH_FULL_EXPERIMENTS))

.PHONY: bench-peers bench-peers-run
bench-peers: build
	@missing=""; for p in $(BENCH_PEERS); do \
	  PATH="$$PATH:/usr/sbin:/usr/local/sbin" command -v $$p-server >/dev/null 2>&1 || missing="$$missing $$p-server"; done; \
	if [ -z "$$missing" ]; then :; \
	elif ! command -v apt-get >/dev/null 2>&1; then echo "bench-peers: no apt-get here: install$$missing yourself"; \
	else sudo=""; if [ "$$(id -u)" != 0 ]; then sudo="sudo -n"; fi; \
	  if [ -n "$$sudo" ] && ! command -v sudo >/dev/null 2>&1; then echo "bench-peers: not root and no sudo: install$$missing yourself"; \
	  elif $$sudo apt-get install -y $$missing || { $$sudo apt-get update && $$sudo apt-get install -y $$missing; }; then :; \
	  else echo "bench-peers: installing$$missing failed: the peers not installed are skipped"; fi; \
	fi
	@$(MAKE) --no-print-directory bench-peers-run

# A sub-make: the peers' experiments, listed after the install above.
bench-peers-run:
	$(peer_notice)
	$(call bench_run,$(BENCH_PEER_EXPERIMENTS))

clean:
	rm -rf bin $(BENCH_DIR)
