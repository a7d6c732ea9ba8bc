# Samsa. Two commands set everything up on a fresh machine:
#   make bench   the lab's main job on an embedded cluster (results/, PERFORMANCE.md)
#   make test    vet + tests (storage and broker with -race)
GO        ?= go
BIN       := bin/samsa
# Packages run under the race detector (storage and broker, as CI requires);
# every other package runs without it.
RACE_DIRS := storage broker
RACE_PKGS  = $$(for d in $(RACE_DIRS); do [ -d $$d ] && $(GO) list ./$$d/...; done)
REST_PKGS  = $$($(GO) list ./... | grep -v $(foreach d,$(RACE_DIRS),-e /samsa/$(d)))
BENCH_DIR ?= $(CURDIR)/.benchdata

.PHONY: all build test vet test-race test-rest fuzz bench bench-full clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/samsa

vet:
	$(GO) vet ./...

# Race-checked packages first, then everything else without -race.
test: vet
	$(GO) test -race -count=1 -timeout 12m $(RACE_PKGS)
	$(GO) test -count=1 -timeout 12m $(REST_PKGS)

# Short fuzz runs of every fuzz target (FUZZTIME each).
FUZZTIME ?= 10s
fuzz:
	@for spec in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -h '^func Fuzz' $$spec/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    echo "fuzz $$spec $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$spec || exit 1; \
	  done; done

bench: build
	@echo "bench: not wired yet"

bench-full: build
	@echo "bench-full: not wired yet"

clean:
	rm -rf bin $(BENCH_DIR)
