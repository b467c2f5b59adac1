GO ?= go

.PHONY: build run test bench fuzz lint

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

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./resp/ ./server/

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParser -fuzztime 60s ./resp/

lint:
	$(GO) vet ./...
	test -z "$$(gofmt -l .)"
