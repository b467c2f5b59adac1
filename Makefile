GO ?= go

.PHONY: build run test bench fuzz lint

build:
	$(GO) build -o bin/sluice-server ./cmd/sluice-server
	$(GO) build -o bin/sluice-bench ./cmd/sluice-bench

run:
	$(GO) run ./cmd/sluice-server

test:
	$(GO) test ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./resp/ ./server/

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParser -fuzztime 60s ./resp/

lint:
	$(GO) vet ./...
	test -z "$$(gofmt -l .)"

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
