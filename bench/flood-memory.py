#!/usr/bin/env python3
"""Concurrent large batches against a running `serve`, and its peak memory meanwhile.

Usage: bench/flood-memory.py --port PORT --pid PID --bodies DIR --app ID --key KEY
           [--clients 200] [--requests 2] [--seconds 120] [--retries 50]

Python standard library only, 127.0.0.1 only. Each of `--clients` threads posts `--requests`
batches (the `batch-*.json` files of `detour-analytics bench bodies`, in turn); a 503 is retried
after its Retry-After (at most `--retries` times per batch), as the SDKs' batch clients do. The
whole run stops after `--seconds`. The server's peak resident set (VmHWM) is reset first
(`/proc/PID/clear_refs`, 5), so the figure is the flood's, and VmRSS is sampled every 20 ms, the C heap
(`malloc_in_use_bytes`, `malloc_held_bytes` of /metrics) every 200 ms.
Prints one `RESULT key=value ...` line.
"""
import argparse
import glob
import http.client
import json
import os
import threading
import time


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def heap_mib(port):
    """malloc_in_use_bytes and malloc_held_bytes from /metrics, in MiB (0 when absent)."""
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
        connection.close()
    except OSError:
        return 0, 0
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("malloc_in_use_bytes", "malloc_held_bytes"):
            values[parts[0]] = float(parts[1]) / 1048576
    return values.get("malloc_in_use_bytes", 0), values.get("malloc_held_bytes", 0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--bodies", required=True)
    parser.add_argument("--app", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--requests", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--retries", type=int, default=50)
    args = parser.parse_args()

    bodies = [open(path, "rb").read() for path in sorted(glob.glob(os.path.join(args.bodies, "batch-*.json")))]
    if not bodies:
        raise SystemExit("no batch-*.json in " + args.bodies)
    headers = {
        "Content-Type": "application/json", "Authorization": "Bearer " + args.key,
        "X-App-ID": args.app, "X-SDK": "ios/1.0.2",
    }
    deadline = time.monotonic() + args.seconds
    lock = threading.Lock()
    tally = {"statuses": {}, "accepted": 0, "acknowledged_requests": 0, "unacknowledged_batches": 0}
    start_barrier = threading.Barrier(args.clients + 1)

    def client(index):
        start_barrier.wait()
        for request in range(args.requests):
            body = bodies[(index * args.requests + request) % len(bodies)]
            done = False
            for _ in range(args.retries + 1):
                if time.monotonic() > deadline:
                    break
                status, answer, retry_after = 0, b"", 0.5
                try:
                    connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)
                    connection.request("POST", "/api/analytics/batch", body=body, headers=headers)
                    response = connection.getresponse()
                    status, answer = response.status, response.read()
                    retry_after = float(response.getheader("Retry-After") or 0.5)
                    connection.close()
                except OSError:
                    pass
                with lock:
                    tally["statuses"][status] = tally["statuses"].get(status, 0) + 1
                if 200 <= status < 300:
                    accepted = json.loads(answer).get("accepted", 0)
                    with lock:
                        tally["accepted"] += accepted if isinstance(accepted, int) else 0
                        tally["acknowledged_requests"] += 1
                    done = True
                    break
                if status not in (0, 503):
                    break
                time.sleep(retry_after)
            if not done:
                with lock:
                    tally["unacknowledged_batches"] += 1

    with open(f"/proc/{args.pid}/clear_refs", "w") as f:
        f.write("5")
    before = status_kb(args.pid, "VmRSS")
    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(args.clients)]
    for thread in threads:
        thread.start()
    began = time.monotonic()
    start_barrier.wait()
    sampled, in_use, held, next_scrape = 0, 0, 0, 0
    while any(t.is_alive() for t in threads) and time.monotonic() < deadline + 5:
        sampled = max(sampled, status_kb(args.pid, "VmRSS"))
        if time.monotonic() >= next_scrape:
            used, kept = heap_mib(args.port)
            in_use, held = max(in_use, used), max(held, kept)
            next_scrape = time.monotonic() + 0.2
        time.sleep(0.02)
    elapsed = time.monotonic() - began
    peak = status_kb(args.pid, "VmHWM")
    time.sleep(2)
    after = status_kb(args.pid, "VmRSS")
    statuses = ",".join(f"{k}:{v}" for k, v in sorted(tally["statuses"].items()))
    print(
        f"RESULT flood clients={args.clients} requests={args.requests} seconds={elapsed:.1f} "
        f"statuses={statuses} acknowledged_requests={tally['acknowledged_requests']} "
        f"unacknowledged_batches={tally['unacknowledged_batches']} accepted_events={tally['accepted']} "
        f"rss_before_mib={before / 1024:.0f} peak_hwm_mib={peak / 1024:.0f} peak_sampled_mib={sampled / 1024:.0f} "
        f"heap_in_use_max_mib={in_use:.0f} heap_held_max_mib={held:.0f} rss_2s_after_mib={after / 1024:.0f}")


if __name__ == "__main__":
    main()
