import EventLog
import EventModel
import Foundation
import Synchronization

extension BenchCommand {
    /// How `bench log` hands requests to the writer (`--append`).
    enum LogAppendMode: String {
        /// `append(ndjson:completion:)` with one ready-made NDJSON buffer per request, as ingest hands
        /// over every request without dead letters: `--threads` requests in flight, issued by a few
        /// producer threads that never wait for a request (default).
        case completion
        /// `append(ndjson:)`: one blocked thread per request in flight, one NDJSON buffer each.
        case ndjson
        /// `append([[UInt8]])`: one blocked thread per request in flight, building an array of
        /// records per request (the harness before session 4).
        case records
    }

    /// `bench log`: the event log writer alone, fed the envelopes of the benchmark bodies as
    /// `--threads` concurrent requests of `--events-per-append` envelopes (one `append` per
    /// simulated request, a new one as soon as one is acknowledged), for a bounded time.
    static func runLog(_ arguments: inout Arguments) throws {
        let directory = try arguments.required("--dir")
        let bodies = try arguments.option("--bodies")
        let seconds = Double(try arguments.option("--seconds") ?? "5") ?? 5
        let threads = try arguments.integer("--threads", default: 8, in: 1...4096)
        let perAppend = try arguments.integer("--events-per-append", default: 100, in: 1...2000)
        let modeName = try arguments.option("--append") ?? LogAppendMode.completion.rawValue
        guard let mode = LogAppendMode(rawValue: modeName) else {
            throw UsageError(description: "--append must be completion, ndjson or records")
        }
        let configuration = try logConfiguration(&arguments, directory: directory + "/segments")
        try arguments.finish()

        let pool = try envelopePool(bodies: bodies)
        try? FileManager.default.removeItem(atPath: configuration.directory)
        let writer = try LogWriter(configuration: configuration)
        let counters = LogBenchCounters()
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + .milliseconds(Int64(seconds * 1000))
        let stuck: Int
        switch mode {
        case .completion:
            let requests = requestBuffers(pool, perAppend: perAppend)
            stuck = runCompletionProducers(
                writer, requests: requests, perAppend: perAppend, inFlight: threads, counters: counters,
                until: deadline, seconds: seconds)
        case .ndjson, .records:
            stuck = runBlockingProducers(
                writer, pool: pool, mode: mode, threads: threads, perAppend: perAppend, counters: counters,
                until: deadline, seconds: seconds)
        }
        let elapsed = durationSeconds(clock.now - start)
        let frames = writer.framesCommitted
        let syncs = writer.syncs
        // Not `writer.close()`: every counted append has been acknowledged, so its events are durable;
        // close() is not part of the measurement.
        let disk = diskUsage(configuration.nodeDirectory)
        let events = counters.events.load(ordering: .relaxed)
        let ndjson = counters.bytes.load(ordering: .relaxed)
        report(
            "log",
            [
                ("codec", configuration.codec.rawValue), ("durability", "\(configuration.durability)"),
                ("level", String(configuration.compressionLevel)), ("append", mode.rawValue),
                ("syncs_in_flight", String(configuration.syncsInFlight)),
                ("compressors", String(configuration.compressionThreads)),
                ("max_batch_bytes", String(configuration.maxBatchBytes)),
                ("preallocate_bytes", String(configuration.preallocationBytes)),
                ("threads", String(threads)), ("events_per_append", String(perAppend)),
                ("events", String(events)), ("seconds", format(elapsed)),
                ("events_per_s", format(Double(events) / elapsed)),
                ("mb_per_s", format(Double(ndjson) / elapsed / 1e6)),
                ("ndjson_bytes", String(ndjson)), ("disk_bytes", String(disk)),
                ("compression_ratio", format(Double(ndjson) / Double(max(1, disk)))), ("frames", String(frames)),
                ("syncs", String(syncs.count)),
                ("sync_ms_mean", format(syncs.seconds * 1000 / Double(max(1, syncs.count)))),
                (
                    "ack_ms_mean",
                    format(
                        Double(counters.latencyNanos.load(ordering: .relaxed)) / 1e6
                            / Double(max(1, counters.acknowledged.load(ordering: .relaxed))))
                ),
                ("avg_envelope_bytes", String(pool.reduce(0) { $0 + $1.count } / pool.count)),
                ("failed_appends", String(counters.failures.load(ordering: .relaxed))),
                ("stuck_threads", String(stuck)),
            ])
        try? FileManager.default.removeItem(atPath: configuration.directory)
        exit(stuck > 0 ? 3 : 0)  // without waiting for the writer thread
    }

    /// `bench log`'s writer settings (`--codec`, `--level`, `--syncs-in-flight`, `--preallocate`,
    /// `--max-batch`, `--compressors`, `--durability`) for a log in `directory`.
    private static func logConfiguration(_ arguments: inout Arguments, directory: String) throws -> LogConfiguration {
        var configuration = LogConfiguration(directory: directory, node: "bench")
        if let codec = try arguments.codec() { configuration.codec = codec }
        if let level = try arguments.option("--level") {
            guard let parsed = Int(level) else { throw UsageError(description: "--level must be an integer") }
            configuration.compressionLevel = parsed
        }
        if let syncs = try arguments.option("--syncs-in-flight") {
            guard let parsed = Int(syncs), (1...8).contains(parsed) else {
                throw UsageError(description: "--syncs-in-flight must be 1...8")
            }
            configuration.syncsInFlight = parsed
        }
        if let text = try arguments.option("--preallocate") {
            configuration.preallocationBytes = try parseBytes(text, flag: "--preallocate")
        }
        if let text = try arguments.option("--max-batch") {
            configuration.maxBatchBytes = Int(try parseBytes(text, flag: "--max-batch"))
        }
        configuration.compressionThreads = try arguments.integer(
            "--compressors", default: configuration.compressionThreads, in: 1...8)
        if let durability = try arguments.durability() { configuration.durability = durability }
        return configuration
    }

    /// `bench recovery`: a writer's start-up over one full open segment of the bench envelopes that
    /// ends in a torn frame (`LogBenchmark.recovery`), `--runs` times with the segment in the page
    /// cache (a restart after `kill -9`) and as many times evicted from it (after a power cut).
    static func runRecovery(_ arguments: inout Arguments) throws {
        let directory = try arguments.required("--dir")
        let bodies = try arguments.option("--bodies")
        let runs = try arguments.integer("--runs", default: 3, in: 1...20)
        var bytes: Int64 = 128 << 20
        if let text = try arguments.option("--segment-bytes") {
            bytes = try parseBytes(text, flag: "--segment-bytes")
            guard (1 << 20)...(4 << 30) ~= bytes else {
                throw UsageError(description: "--segment-bytes must be 1MiB...4GiB")
            }
        }
        var configuration = LogConfiguration(directory: directory + "/segments", node: "bench")
        if let codec = try arguments.codec() { configuration.codec = codec }
        try arguments.finish()
        let pool = try envelopePool(bodies: bodies)
        let warm = try LogBenchmark.recovery(configuration, pool: pool, bytes: bytes, runs: runs, cold: false)
        let cold = try LogBenchmark.recovery(configuration, pool: pool, bytes: bytes, runs: runs, cold: true)
        func list(_ values: [Double]) -> String { values.map(format).joined(separator: ",") }
        report(
            "recovery",
            [
                ("codec", configuration.codec.rawValue), ("segment_bytes", String(warm.segmentBytes)),
                ("runs", String(runs)), ("warm_s", list(warm.seconds)), ("cold_s", list(cold.seconds)),
                ("warm_max_s", format(warm.seconds.max() ?? 0)), ("cold_max_s", format(cold.seconds.max() ?? 0)),
                ("torn_frame_bytes", String(LogBenchmark.tornFrameBytes)),
                ("torn_bytes_cut", (warm.cutBytes + cold.cutBytes).map(String.init).joined(separator: ",")),
            ])
    }

    /// The pool's envelopes as ready-made request buffers of `perAppend` lines each (every line
    /// followed by "\n"), as the ingest normaliser hands them to the log; made before the clock starts.
    private static func requestBuffers(_ pool: [[UInt8]], perAppend: Int) -> [[UInt8]] {
        let count = max(1, pool.count / perAppend)
        var cursor = 0
        return (0..<count).map { _ in
            var buffer: [UInt8] = []
            for _ in 0..<perAppend {
                buffer += pool[cursor]
                buffer.append(10)
                cursor = (cursor + 1) % pool.count
            }
            return buffer
        }
    }

    /// `--append completion`: `inFlight` requests outstanding at all times, issued by two producer
    /// threads; a request's completion (on the writer's thread) frees its slot. Returns the number
    /// of producers whose requests did not all complete in time.
    private static func runCompletionProducers(
        _ writer: LogWriter, requests: [[UInt8]], perAppend: Int, inFlight: Int, counters: LogBenchCounters,
        until deadline: ContinuousClock.Instant, seconds: Double
    ) -> Int {
        let producers = min(2, inFlight)
        let finished = DispatchSemaphore(value: 0)
        for producer in 0..<producers {
            let slots = inFlight / producers + (producer < inFlight % producers ? 1 : 0)
            Thread {
                // Created at 0 and signalled: libdispatch traps when a semaphore is freed below its initial value.
                let free = DispatchSemaphore(value: 0)
                for _ in 0..<slots { free.signal() }
                var cursor = (producer * 7919) % requests.count
                while ContinuousClock.now < deadline {
                    free.wait()
                    let request = requests[cursor]
                    cursor = (cursor + 1) % requests.count
                    let bytes = request.count
                    let issued = ContinuousClock.now
                    request.withUnsafeBytes { ndjson in
                        // The line count is known, as ingest's normaliser knows it.
                        writer.append(ndjson: ndjson, records: perAppend) { error in
                            counters.count(error: error, events: perAppend, bytes: bytes, since: issued)
                            free.signal()
                        }
                    }
                }
                // Every slot back: each request issued has completed.
                let giveUp = DispatchTime.now() + 10
                var complete = true
                for _ in 0..<slots where free.wait(timeout: giveUp) == .timedOut { complete = false }
                if !complete { counters.stuck.wrappingAdd(1, ordering: .relaxed) }
                finished.signal()
            }.start()
        }
        let giveUp = DispatchTime.now() + seconds + 15
        var stuck = 0
        for _ in 0..<producers where finished.wait(timeout: giveUp) == .timedOut { stuck += 1 }
        return stuck + counters.stuck.load(ordering: .relaxed)
    }
    /// `--append ndjson|records`: `threads` threads, each appending one request at a time and
    /// waiting in `append` until it is durable. Returns the number of threads that never returned.
    private static func runBlockingProducers(
        _ writer: LogWriter, pool: [[UInt8]], mode: LogAppendMode, threads: Int, perAppend: Int,
        counters: LogBenchCounters, until deadline: ContinuousClock.Instant, seconds: Double
    ) -> Int {
        let requests = mode == .ndjson ? requestBuffers(pool, perAppend: perAppend) : []
        let finished = DispatchSemaphore(value: 0)
        for thread in 0..<threads {
            Thread {
                var cursor = (thread * 7919) % pool.count
                var records: [[UInt8]] = []
                records.reserveCapacity(perAppend)
                while ContinuousClock.now < deadline {
                    var size = 0
                    let issued = ContinuousClock.now
                    let appended: Void?
                    if mode == .ndjson {
                        let request = requests[cursor % requests.count]
                        size = request.count
                        appended = try? writer.append(ndjson: request)
                        cursor += 1
                    } else {
                        records.removeAll(keepingCapacity: true)
                        for _ in 0..<perAppend {
                            records.append(pool[cursor])
                            size += pool[cursor].count + 1
                            cursor = (cursor + 1) % pool.count
                        }
                        appended = try? writer.append(records)
                    }
                    counters.count(
                        error: appended == nil ? .unavailable(reason: "") : nil, events: perAppend, bytes: size,
                        since: issued)
                }
                finished.signal()
            }.start()
        }
        // Bounded: an append that never returns is reported, not waited for forever.
        var stuck = 0
        let giveUp = DispatchTime.now() + seconds + 10
        for _ in 0..<threads where finished.wait(timeout: giveUp) == .timedOut { stuck += 1 }
        return stuck
    }

    /// `bench segments`: N unique events as event-log segments (what ingest writes) and as CSV in the
    /// events table's column order (what `psql \copy` loads), for the loader comparison.
    static func runSegments(_ arguments: inout Arguments) throws {
        let data = try arguments.required("--data-dir")
        let csvPath = try arguments.required("--csv")
        let count = try arguments.integer("--events", default: 200_000, in: 100...50_000_000)
        let seed = UInt64(try arguments.integer("--seed", default: 7, in: 0...Int.max))
        let app = try arguments.option("--app") ?? "bench"
        var configuration = LogConfiguration(
            directory: data + "/segments", node: try arguments.option("--node") ?? "node-1")
        if let codec = try arguments.codec() { configuration.codec = codec }
        let base = try baseTime(&arguments)
        try arguments.finish()
        configuration.durability = .interval(.milliseconds(200))
        configuration.groupCommitDelay = .zero

        let writer = try LogWriter(configuration: configuration)
        _ = FileManager.default.createFile(atPath: csvPath, contents: nil)
        guard let csv = FileHandle(forWritingAtPath: csvPath) else {
            throw UsageError(description: "cannot write \(csvPath)")
        }
        var generator = BenchEventGenerator(seed: seed, base: base)
        var written = 0
        var ndjson = 0
        while written < count {
            let size = min(1000, count - written)
            let body = Array(generator.batch(size: size).utf8)
            let context = RequestContext(appID: app, sdkHeader: "ios/1.0.2", receivedAt: base)
            let normalized = try Normalizer.batch(body: body, context: context)
            let records = normalized.accepted.map { $0.encoded() }
            try writer.append(records)
            var rows: [UInt8] = []
            for envelope in normalized.accepted { appendCSVRow(envelope, to: &rows) }
            try csv.write(contentsOf: rows)
            written += size
            ndjson += records.reduce(0) { $0 + $1.count + 1 }
            if normalized.accepted.count != size {
                throw UsageError(
                    description:
                        "the generator made \(size - normalized.accepted.count) events ingest rejects: \(normalized.rejected.prefix(3))"
                )
            }
        }
        writer.close()  // syncs the last frames (interval durability) and releases the directory
        report(
            "segments",
            [("events", String(written)), ("ndjson_bytes", String(ndjson)), ("codec", configuration.codec.rawValue)])
        try? csv.synchronize()
        exit(0)
    }

    /// The envelopes of every batch body in `bodies` (default: freshly generated ones).
    static func envelopePool(bodies: String?) throws -> [[UInt8]] {
        var documents: [[UInt8]] = []
        if let bodies {
            documents = try readBodies(directory: bodies).filter { $0.starts(with: Array(#"{"sent_at""#.utf8)) }
        }
        // At least 50k distinct envelopes (~25 MB), more than any frame holds, so repeats inside a
        // frame cannot inflate the compression ratio.
        var generator = BenchEventGenerator(seed: 4242, base: Timestamp.now())
        while documents.count < 500 { documents.append(Array(generator.batch(size: 100).utf8)) }
        var pool: [[UInt8]] = []
        for body in documents {
            let context = RequestContext(appID: "bench", sdkHeader: "ios/1.0.2", receivedAt: Timestamp.now())
            pool += try Normalizer.batch(body: body, context: context).accepted.map { $0.encoded() }
        }
        guard !pool.isEmpty else { throw UsageError(description: "no batch bodies to turn into envelopes") }
        return pool
    }

    /// One CSV row (RFC 4180; empty unquoted field = NULL) in the column order of `events`:
    /// app_id, event_id, kind, name, device_id, platform, sdk, event_time, received_at, client_ts,
    /// sent_at, install_click_id, open_click_id, open_type, click_id, data, metadata, clock.
    static func appendCSVRow(_ e: Envelope, to out: inout [UInt8]) {
        let fields: [[UInt8]?] = [
            Array(e.app.utf8), Array(e.id.utf8), Array(e.kind.rawValue.utf8), e.name.map { Array($0.utf8) },
            e.device.map { Array($0.utf8) }, e.platform.map { Array($0.rawValue.utf8) }, e.sdk.map { Array($0.utf8) },
            Array(e.time.iso8601.utf8), Array(e.receivedAt.iso8601.utf8),
            e.clientTimestamp.map { Array($0.iso8601.utf8) },
            e.sentAt.map { Array($0.iso8601.utf8) }, e.attribution?.installClickID.map { Array($0.utf8) },
            e.attribution?.openClickID.map { Array($0.utf8) }, e.attribution?.openType.map { Array($0.utf8) },
            e.clickID.map { Array($0.utf8) }, e.data, e.metadata, Array(e.clock.rawValue.utf8),
        ]
        for (index, field) in fields.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            guard let field else { continue }
            out.append(UInt8(ascii: "\""))
            for byte in field {
                if byte == UInt8(ascii: "\"") { out.append(byte) }
                out.append(byte)
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "\n"))
    }

    /// Bytes of every regular file under `path`.
    static func diskUsage(_ path: String) -> Int {
        guard let enumerator = FileManager.default.enumerator(atPath: path) else { return 0 }
        var total = 0
        while let name = enumerator.nextObject() as? String {
            let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/" + name)
            if attributes?[.type] as? FileAttributeType == .typeRegular {
                total += (attributes?[.size] as? NSNumber)?.intValue ?? 0
            }
        }
        return total
    }

    static func durationSeconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// What `bench log` counts: acknowledged events and NDJSON bytes, failed appends, producers whose
/// requests never completed.
final class LogBenchCounters: Sendable {
    let events = Atomic<Int>(0)
    let bytes = Atomic<Int>(0)
    let failures = Atomic<Int>(0)
    let stuck = Atomic<Int>(0)
    /// Acknowledged appends and the sum of their latencies (issue to acknowledgement).
    let acknowledged = Atomic<Int>(0)
    let latencyNanos = Atomic<Int>(0)

    /// Counts one finished append of `events` envelopes (`bytes` of NDJSON) issued at `issued`.
    func count(error: LogError?, events count: Int, bytes size: Int, since issued: ContinuousClock.Instant) {
        if error == nil {
            events.wrappingAdd(count, ordering: .relaxed)
            bytes.wrappingAdd(size, ordering: .relaxed)
            acknowledged.wrappingAdd(1, ordering: .relaxed)
            latencyNanos.wrappingAdd(Int((ContinuousClock.now - issued) / .nanoseconds(1)), ordering: .relaxed)
        } else {
            failures.wrappingAdd(1, ordering: .relaxed)
        }
    }
}
