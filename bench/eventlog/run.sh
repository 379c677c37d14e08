#!/bin/sh
# Event log benchmark: appends of realistic ~400-byte envelopes from concurrent threads (zstd and
# gzip), compression ratio, and start-up recovery of a 128 MiB open segment.
# The same code runs as the hidden CLI command `detour-analytics bench log` (LogBenchmark.run).
# Environment knobs: DETOUR_BENCH_EVENTS (default 1000000), DETOUR_BENCH_THREADS (8),
# DETOUR_BENCH_BATCH (records per append, 20), DETOUR_BENCH_RECOVERY_MIB (128, 0 skips),
# DETOUR_BENCH_DELAY_US (group commit delay, 2000),
# DETOUR_BENCH_LEVEL (compression level, 1), DETOUR_BENCH_INTERVAL (set: interval durability 50 ms instead of fsync),
# DETOUR_BENCH_ZIP_THREADS (compressor threads, 2), DETOUR_BENCH_NDJSON (set: append(ndjson:) instead of [[UInt8]]),
# DETOUR_BENCH_CODECS (zstd,gzip), DETOUR_BENCH_DIR.
# Besides events/s it prints the process CPU per event (getrusage over the append run), which
# survives other load on the machine far better than wall-clock figures: compare that first.
# bench/eventlog/zstd-levels.c measures zstd levels and parameters on an NDJSON file (see its header).
set -e
cd "$(dirname "$0")/../.."
DETOUR_BENCH_LOG=1 swift test -c release -Xswiftc -enable-testing --filter LogBenchmarkRun 2>&1 | grep -E "^(event log|zstd|gzip)"
