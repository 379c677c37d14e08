#!/bin/bash
# Before/after comparison of the event log writer through `detour-analytics bench log` (the
# figure bench/bench.py reports: fsync, 64 threads x 100 events per append, 3 s), interleaving
# the given variants round by round so machine load hits them alike.
# Usage: bench/eventlog/compare.sh CODEC ROUNDS VARIANT...
#   VARIANT is a binary, optionally followed by extra `bench log` options in the same word:
#   e.g. bench/eventlog/compare.sh zstd 4 /tmp/detour-before .build/release/detour-analytics \
#        ".build/release/detour-analytics --level -2" ".build/release/detour-analytics --append records"
# THREADS=N (default 64) sets the requests in flight, e.g. THREADS=256 for the writer's capacity.
# Prints events/s (wall), compression ratio, frames and events per CPU-second: process CPU
# (user + system, /usr/bin/time) minus that of a 0.01 s run (start-up: building the envelope pool).
set -e
codec=$1; rounds=$2; shift 2
dir=$(mktemp -d /tmp/eventlog-compare.XXXXXX)
trap 'rm -rf "$dir"' EXIT
declare -A setup
for variant in "$@"; do
  read -r -a cmd <<<"$variant"
  /usr/bin/time -f "%U %S" -o "$dir/time" "${cmd[@]:0:1}" bench log --dir "$dir/run" --seconds 0.01 --codec "$codec" \
    --threads "${THREADS:-64}" --events-per-append 100 "${cmd[@]:1}" >/dev/null
  setup[$variant]=$(awk '{print $1 + $2}' "$dir/time")
done
for round in $(seq "$rounds"); do
  for variant in "$@"; do
    read -r -a cmd <<<"$variant"
    out=$(/usr/bin/time -f "%U %S" -o "$dir/time" "${cmd[@]:0:1}" bench log --dir "$dir/run" --seconds 3 --codec "$codec" \
      --threads "${THREADS:-64}" --events-per-append 100 "${cmd[@]:1}")
    field() { echo "$out" | grep -oE " $1=[0-9.]+" | cut -d= -f2; }
    cpu=$(awk -v s="${setup[$variant]}" '{print $1 + $2 - s}' "$dir/time")
    echo "$variant | $codec round $round: $(field events_per_s) events/s, ratio $(field compression_ratio)x," \
      "$(field frames) frames, $(awk -v e="$(field events)" -v c="$cpu" 'BEGIN {printf "%.0f", e / c}') events per CPU-second," \
      "load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
