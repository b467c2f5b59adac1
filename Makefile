GO ?= go
# Extra arguments for scripts/bench-compare.sh, e.g. make bench-compare BENCH_ARGS="--rounds 5 --mem"
BENCH_ARGS ?=

.PHONY: build run test test-race bench bench-compare bench-mem fuzz fuzz-smoke lint ci

build:
	$(GO) build -o bin/sluice-server ./cmd/sluice-server
	$(GO) build -o bin/sluice-bench ./cmd/sluice-bench

run:
	$(GO) run ./cmd/sluice-server

test:
	$(GO) test ./...

test-race:
	$(GO) test -race -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./resp/ ./server/

# Sluice vs redis-server under redis-benchmark (interleaved rounds, Markdown tables).
bench-compare:
	scripts/bench-compare.sh $(BENCH_ARGS)

# RSS of 1,000,000 keys with 64-byte values in each server.
bench-mem:
	scripts/bench-compare.sh --mem-only $(BENCH_ARGS)

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParser -fuzztime 60s ./resp/

fuzz-smoke:
	$(GO) test -run '^$$' -fuzz FuzzParser -fuzztime 20s ./resp/

lint:
	$(GO) vet ./...
	test -z "$$(gofmt -l .)"

ci:
	.ci/run
