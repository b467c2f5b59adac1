module github.com/sluicedb/sluice

go 1.26.8

require (
	github.com/redis/go-redis/v9 v9.23.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
)
