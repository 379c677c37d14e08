#!/bin/bash
# Where the threads of a `bench log` run spend their time: per-thread CPU and run-queue wait
# (/proc/PID/task/*/schedstat) over 1.5 s of the run, in cores; CPU + wait = the cores the
# process would use on an idle machine. Threads are listed in creation order: sync thread(s),
# compressors, committer, then the producers.
# Usage: bench/eventlog/thread-demand.sh BINARY [extra bench log options]
work=$(mktemp -d /tmp/eventlog-demand.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$1" bench log --dir "$work/run" --seconds 3 --codec zstd --threads 64 --events-per-append 100 "${@:2}" > "$work/out" &
pid=$!
for i in $(seq 100); do [ $(ls /proc/$pid/task | wc -l) -gt 5 ] && break; sleep 0.05; done; sleep 0.3
snap() { for t in /proc/$pid/task/*; do echo "$(basename $t) $(cat $t/comm 2>/dev/null | tr ' ' _) $(cat $t/schedstat 2>/dev/null)"; done; }
snap > "$work/a"; s=$(date +%s.%N)
sleep 1.5
snap > "$work/b"; e=$(date +%s.%N)
wait $pid
grep -oE "events_per_s=\S+" "$work/out"
join <(sort "$work/a") <(sort "$work/b") | awk -v w=$(echo "$e - $s" | bc) '
 { cpu=($7-$3)/1e9; wait=($8-$4)/1e9; name=$2; if (name ~ /^detour/) name="producers/main";
   c[name]+=cpu; q[name]+=wait; tc+=cpu; tq+=wait; if ((cpu+wait)/w > 0.03) printf "  tid %s cpu %.2f wait %.2f\n", $1, cpu/w, wait/w }
 END { for (n in c) printf "%-16s cpu %.2f cores, runqueue wait %.2f cores\n", n, c[n]/w, q[n]/w;
       printf "TOTAL cpu %.2f cores, wait %.2f, demand %.2f cores (window %.2fs)\n", tc/w, tq/w, (tc+tq)/w, w }'
