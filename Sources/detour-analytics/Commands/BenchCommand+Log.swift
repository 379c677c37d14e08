import EventLog
import EventModel
import Foundation
import Synchronization

extension BenchCommand {
    /// `bench log`: the event log writer alone, fed the envelopes of the benchmark bodies from
    /// concurrent threads (one `append` per simulated request), for a bounded time.
    static func runLog(_ arguments: inout Arguments) throws {
        let directory = try arguments.required("--dir")
        let bodies = try arguments.option("--bodies")
        let seconds = Double(try arguments.option("--seconds") ?? "5") ?? 5
        let threads = try arguments.integer("--threads", default: 8, in: 1...512)
        let perAppend = try arguments.integer("--events-per-append", default: 100, in: 1...2000)
        var configuration = LogConfiguration(directory: directory + "/segments", node: "bench")
        if let codec = try arguments.option("--codec") {
            guard let parsed = Codec(rawValue: codec) else {
                throw UsageError(description: "--codec must be zstd or gzip")
            }
            configuration.codec = parsed
        }
        if let mode = try arguments.option("--durability"), mode != "fsync" {
            guard mode.hasPrefix("interval:") else {
                throw UsageError(description: "--durability must be fsync or interval:DUR")
            }
            configuration.durability = .interval(try parseDuration(String(mode.dropFirst(9)), flag: "--durability"))
        }
        try arguments.finish()

        let pool = try envelopePool(bodies: bodies)
        try? FileManager.default.removeItem(atPath: configuration.directory)
        let writer = try LogWriter(configuration: configuration)
        let appended = Atomic<Int>(0)
        let bytes = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let finished = DispatchSemaphore(value: 0)
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + .milliseconds(Int64(seconds * 1000))
        for thread in 0..<threads {
            Thread {
                var cursor = (thread * 7919) % pool.count
                var records: [[UInt8]] = []
                records.reserveCapacity(perAppend)
                while clock.now < deadline {
                    records.removeAll(keepingCapacity: true)
                    var size = 0
                    for _ in 0..<perAppend {
                        records.append(pool[cursor])
                        size += pool[cursor].count + 1
                        cursor = (cursor + 1) % pool.count
                    }
                    do {
                        try writer.append(records)
                        appended.wrappingAdd(perAppend, ordering: .relaxed)
                        bytes.wrappingAdd(size, ordering: .relaxed)
                    } catch {
                        failures.wrappingAdd(1, ordering: .relaxed)
                    }
                }
                finished.signal()
            }.start()
        }
        // Bounded: an append that never returns is reported, not waited for forever.
        var stuck = 0
        let giveUp = DispatchTime.now() + seconds + 10
        for _ in 0..<threads where finished.wait(timeout: giveUp) == .timedOut { stuck += 1 }
        let elapsed = durationSeconds(clock.now - start)
        let frames = writer.framesCommitted
        // Not `writer.close()`: every counted append has returned, so its events are durable; close()
        // is not part of the measurement and (on main at the time of writing) can hang, see docs/benchmarks.md.
        let disk = diskUsage(configuration.nodeDirectory)
        let events = appended.load(ordering: .relaxed)
        let ndjson = bytes.load(ordering: .relaxed)
        report(
            "log",
            [
                ("codec", configuration.codec.rawValue), ("durability", "\(configuration.durability)"),
                ("threads", String(threads)), ("events_per_append", String(perAppend)),
                ("events", String(events)), ("seconds", format(elapsed)),
                ("events_per_s", format(Double(events) / elapsed)),
                ("mb_per_s", format(Double(ndjson) / elapsed / 1e6)),
                ("ndjson_bytes", String(ndjson)), ("disk_bytes", String(disk)),
                ("compression_ratio", format(Double(ndjson) / Double(max(1, disk)))), ("frames", String(frames)),
                ("avg_envelope_bytes", String(pool.reduce(0) { $0 + $1.count } / pool.count)),
                ("failed_appends", String(failures.load(ordering: .relaxed))), ("stuck_threads", String(stuck)),
            ])
        try? FileManager.default.removeItem(atPath: configuration.directory)
        exit(stuck > 0 ? 3 : 0)  // without waiting for the writer thread
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
        if let codec = try arguments.option("--codec") {
            guard let parsed = Codec(rawValue: codec) else {
                throw UsageError(description: "--codec must be zstd or gzip")
            }
            configuration.codec = parsed
        }
        let base = try baseTime(&arguments)
        try arguments.finish()
        configuration.durability = .interval(.milliseconds(200))
        configuration.groupCommitDelay = .zero

        // Never closed: close() can hang on main (see runLog); every append has returned, so every
        // frame is written, and the process exits right after the report.
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
