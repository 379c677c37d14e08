#!/bin/bash
# The event_ids key in isolation (docs/aggregator.md, "Sixth session"): tables shaped like event_ids
# with 1M and 10M keys, random ('h:' || md5) or time-prefixed like ingest's hashed ids; then, after a
# CHECKPOINT, five transactions of 10,000 new keys each, timed (psql \timing) with the WAL position
# before and after. Two rounds. Needs a superuser URL (CHECKPOINT); leaves nothing behind.
# Usage: bench/aggregator/event-id-locality.sh DATABASE_URL
set -euo pipefail
U=${1:?usage: $0 DATABASE_URL}
for n in 1000000 10000000; do
for kind in random ordered; do
  t=ids_${kind}_$n
  if [ $kind = random ]; then key="'h:' || md5('pre' || g)"; else key="'h:' || lpad(to_hex((extract(epoch from now() - interval '1 hour')*1000)::bigint - (g::bigint * 2592000000 / $n)), 12, '0') || left(md5('pre' || g), 20)"; fi
  psql -q "$U" -c "DROP TABLE IF EXISTS $t; CREATE TABLE $t (app_id text NOT NULL, event_id text NOT NULL, event_time timestamptz NOT NULL, PRIMARY KEY (app_id, event_id));" 
  psql -q "$U" -c "INSERT INTO $t SELECT 'app_bench', k, now() FROM (SELECT $key AS k FROM generate_series(1, $n) g) s ORDER BY k;" 
  psql -q "$U" -c "VACUUM ANALYZE $t"
done
done
for round in 1 2; do
for n in 1000000 10000000; do
for kind in random ordered; do
  t=ids_${kind}_$n
  psql -q "$U" -c "CHECKPOINT"
  out=""
  for c in 1 2 3 4 5; do
    if [ $kind = random ]; then key="'h:' || md5(random()::text || clock_timestamp()::text)"; else key="'h:' || lpad(to_hex((extract(epoch from clock_timestamp())*1000)::bigint - CASE WHEN g % 20 = 0 THEN (random()*172800000)::bigint ELSE (random()*10000)::bigint END), 12, '0') || left(md5(random()::text || g), 20)"; fi
    ms=$(psql -qAt "$U" -c "SELECT pg_current_wal_lsn()" -c "\\timing on" -c "INSERT INTO $t SELECT 'app_bench', $key, now() FROM generate_series(1, 10000) g" -c "SELECT pg_current_wal_lsn()" 2>&1 | tr '\n' ' ')
    out="$out | $ms"
  done
  echo "round $round $t: $out"
done
done
done
for n in 1000000 10000000; do for kind in random ordered; do psql -q "$U" -c "DROP TABLE ids_${kind}_$n"; done; done
