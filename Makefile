# roce-inspect: `make test` runs the test suite, `make bench` the throughput
# benchmark against cat and tshark (SIZE_MB=200 make bench for a quick run),
# `make bench-go` the Go benchmarks of the CRC, the decoder, the ICRC, the analysis,
# the reader and the pipeline.
GO ?= go

.PHONY: test bench bench-go

test:
	$(GO) test ./...

bench:
	bench/run.sh

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/crcfold ./layers ./dissect ./analyze ./capture ./pipeline
