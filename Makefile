GO ?= go
# Extra arguments for scripts/bench-compare.sh, e.g. make bench-compare BENCH_ARGS="--rounds 5 --mem"
BENCH_ARGS ?=

.PHONY: build run test test-race bench bench-compare bench-setget bench-types bench-aof bench-mem bench-mem-types fuzz fuzz-smoke lint ci

build:
	$(GO) build -o bin/sluice-server ./cmd/sluice-server
	$(GO) build -o bin/sluice-bench ./cmd/sluice-bench

run:
	$(GO) run ./cmd/sluice-server

# The README's test command: installs redis-server if missing (the
# differential tests compare against it), then runs every test.
test:
	scripts/ensure-redis.sh
	$(GO) test -count=1 ./...

test-race:
	$(GO) test -race -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./resp/ ./server/

# redis-benchmark SET/GET at -P 1, -P 16 and -d 1024
# against sluice-server and redis-server, interleaved rounds, rps/p99/CPU per
# request ratios as Markdown tables.
bench-setget:
	scripts/bench-compare.sh $(BENCH_ARGS)

# The data-type tests (LPUSH … MSET) at -P 1 and -P 16.
bench-types:
	scripts/bench-compare.sh --suite types $(BENCH_ARGS)

# SET with an append-only file (appendfsync everysec, then always) against
# sluice-server and redis-server, each in its own data directory.
bench-aof:
	scripts/bench-compare.sh --suite aof --aof everysec $(BENCH_ARGS)
	scripts/bench-compare.sh --suite aof --aof always $(BENCH_ARGS)

# RSS of 1,000,000 keys with 64-byte values in each server.
bench-mem:
	scripts/bench-compare.sh --mem-only $(BENCH_ARGS)

# Bytes per member of a 1,000,000-member hash, set
# and sorted set in each server.
bench-mem-types:
	scripts/bench-compare.sh --mem-types $(BENCH_ARGS)

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParser -fuzztime 60s ./resp/

fuzz-smoke:
	$(GO) test -run '^$$' -fuzz FuzzParser -fuzztime 20s ./resp/

lint:
	$(GO) vet ./...
	test -z "$$(gofmt -l .)"

# The redigo pipeline benchmark: redigo pipelined vs one-by-one (batches of 10/100/1000) against an
# in-process Sluice, redis-server (skipped when absent) and miniredis, 5 runs
# each, summarised by benchstat.
COUNT ?= 5
BENCHTIME ?= 1s
BENCHSTAT ?= golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

.PHONY: bench-redigo-pipeline bench-compare
bench-redigo-pipeline:
	mkdir -p .bench
	$(GO) test -run '^$$' -bench 'RedigoPipeline' -benchmem -benchtime $(BENCHTIME) -count $(COUNT) ./bench/ > .bench/redigo-pipeline.txt || { cat .bench/redigo-pipeline.txt; exit 1; }
	cat .bench/redigo-pipeline.txt
	$(GO) run $(BENCHSTAT) .bench/redigo-pipeline.txt

# In-process round trips, one command per round trip (go-redis and redigo
# over 127.0.0.1, go-redis through each server's in-memory Dial): miniredis
# vs the embedded Sluice (sluicetest and its miniredis API) in one binary,
# ROUNDS interleaved runs, benchstat with miniredis as the base column.
ROUNDS ?= 5
.PHONY: bench-inprocess
bench-inprocess:
	mkdir -p .bench
	$(GO) test -c -o .bench/inprocess.test ./bench/
	rm -f .bench/inprocess.txt
	cd bench && for i in $$(seq $(ROUNDS)); do \
		../.bench/inprocess.test -test.run '^$$' -test.bench 'InProcessRoundTrip' -test.benchmem -test.benchtime $(BENCHTIME) >> ../.bench/inprocess.txt || exit 1; \
	done
	$(GO) run $(BENCHSTAT) -col /server .bench/inprocess.txt

# Sluice vs redis-server through redis-benchmark; SUITE=all for everything.
SUITE ?= default
bench-compare:
	$(GO) run ./cmd/sluice-bench compare -suite $(SUITE) -out out/compare

# Cache codec benchmarks (cache/bench_test.go) against an embedded Sluice and
# redis-server, printed as one Markdown table. CACHE_BENCHTIME=2000x is brief;
# use e.g. 2s on a quiet machine.
CACHE_BENCH ?= .
CACHE_BENCHTIME ?= 2000x

.PHONY: bench-cache
bench-cache:
	@mkdir -p bin
	@echo "cache benchmarks, -benchtime $(CACHE_BENCHTIME); raw output in bin/bench-cache.txt" >&2
	@$(GO) test -run '^$$' -bench '$(CACHE_BENCH)' -benchmem -benchtime $(CACHE_BENCHTIME) ./cache/ > bin/bench-cache.txt || (cat bin/bench-cache.txt; exit 1)
	@$(GO) run ./cache/internal/benchtable bin/bench-cache.txt

# A client's longest wait during BGSAVE and BGREWRITEAOF of 1,000,000 small
# strings and BGSAVE of 30,000 collections, Sluice and redis-server side by
# side (interleaved).
.PHONY: bench-snapshot
bench-snapshot: build
	bin/sluice-bench snapshot -sluice-bin bin/sluice-server -rounds 5
	bin/sluice-bench snapshot -sluice-bin bin/sluice-server -rounds 5 -command bgrewriteaof
	bin/sluice-bench snapshot -sluice-bin bin/sluice-server -rounds 5 -dataset collections -keys 10000

ci:
	.ci/run
