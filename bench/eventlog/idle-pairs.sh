#!/bin/bash
# Runs `bench log` variants (as compare.sh takes them) one after another, only after a 1 s window in
# which the machine was >= 85 % idle, up to PAIRS times within SECONDS: wall-clock figures closer to a
# quiet machine than compare.sh gives on a shared box (the idle window says nothing about what
# starts during the run, so still compare variants of the same window).
# Usage: bench/eventlog/idle-pairs.sh PAIRS SECONDS VARIANT...
pairs=$1; budget=$2; shift 2
work=$(mktemp -d /tmp/eventlog-idle.XXXXXX)
trap 'rm -rf "$work"' EXIT
end=$(( $(date +%s) + budget )); done_pairs=0
idle() { read -r _ u n s i w q sq st _ < /proc/stat; t1=$((u+n+s+i+w+q+sq+st)); i1=$i; sleep 1; read -r _ u n s i w q sq st _ < /proc/stat; t2=$((u+n+s+i+w+q+sq+st)); echo $(( 100 * (i - i1) / (t2 - t1) )); }
while [ $done_pairs -lt $pairs ] && [ $(date +%s) -lt $end ]; do
  pct=$(idle)
  if [ "$pct" -ge 85 ]; then
    for variant in "$@"; do
      read -r -a cmd <<<"$variant"
      rm -rf "$work/run"
      out=$(/usr/bin/time -f "%U %S %e" -o "$work/time" "${cmd[@]:0:1}" bench log --dir "$work/run" --seconds 3 --codec zstd --threads 64 --events-per-append 100 "${cmd[@]:1}")
      echo "$(date -u +%H:%M:%S) idle-before ${pct}% | $variant | $(echo "$out" | grep -oE ' (events_per_s|frames|compression_ratio)=[0-9.]+' | tr '\n' ' ') | cpu $(cat "$work/time")"
    done
    done_pairs=$((done_pairs+1))
  fi
done
