// Package clients holds tests that drive Sluice through client libraries
// of other languages (redis-py: tests/python; node-redis: tests/node),
// next to a real redis-server running the same scripts as the reference.
package clients
