import Foundation
import Synchronization

/// A throughput and recovery benchmark of the event log, run by the hidden CLI command
/// `detour-analytics bench-log` (figures go in `bench/eventlog/`, never in tests).
package enum LogBenchmark {
    /// What to run.
    package struct Options: Sendable {
        /// Scratch directory (removed and recreated per run).
        package var directory: String
        /// Records appended per codec.
        package var events: Int = 1_000_000
        /// Appending threads (ingest worker threads).
        package var threads: Int = 8
        /// Records per `append` call (events per HTTP request).
        package var recordsPerAppend: Int = 20
        /// Codecs to measure.
        package var codecs: [Codec] = [.zstd, .gzip]
        /// Durability mode of the throughput runs.
        package var durability: Durability = .fsync
        /// Group commit delay of the throughput runs (the log's default is 2 ms).
        package var groupCommitDelay: Duration = .milliseconds(2)
        /// Compression level (zstd 1 by default; the same number is used for gzip, clamped to 1...9).
        package var compressionLevel: Int = 1
        /// Compressor threads of the writer (the log's default is 2).
        package var compressionThreads: Int = 2
        /// Hand each append over as one NDJSON buffer (`append(ndjson:)`) instead of an array per record.
        package var usesNDJSON = false
        /// Size of the open segment built for the recovery measurement; 0 skips it.
        package var recoverySegmentBytes: Int64 = 128 * 1024 * 1024

        /// Options with defaults, writing under `directory`.
        package init(directory: String) { self.directory = directory }
    }

    /// Results for one codec.
    package struct Result: Sendable {
        /// Codec measured.
        package var codec: Codec
        /// Records appended and acknowledged.
        package var events: Int
        /// Wall time of the append run.
        package var seconds: Double
        /// NDJSON bytes appended (records plus newlines).
        package var ndjsonBytes: Int64
        /// Bytes of the segments written.
        package var diskBytes: Int64
        /// Frames (group commits) written.
        package var frames: Int
        /// CPU time (user + system) of the whole process during the append run: appending threads,
        /// compressors and committer. Unlike wall time it hardly depends on other load on the machine.
        package var cpuSeconds: Double = 0
        /// Writer start-up time over a full open segment, nil when not measured.
        package var recoverySeconds: Double?
        /// Size of that segment.
        package var recoveredSegmentBytes: Int64?
        /// Appended records per second.
        package var eventsPerSecond: Double { Double(events) / seconds }
        /// Uncompressed NDJSON MB (10^6 bytes) per second.
        package var megabytesPerSecond: Double { Double(ndjsonBytes) / seconds / 1e6 }
        /// Microseconds of CPU per appended record (whole process).
        package var cpuMicrosPerEvent: Double { cpuSeconds * 1e6 / Double(max(1, events)) }
        /// NDJSON bytes per byte on disk.
        package var compressionRatio: Double { Double(ndjsonBytes) / Double(max(1, diskBytes)) }
    }

    /// Runs the benchmark for each codec and returns the results.
    /// - Throws: any `LogError` from the log under test.
    package static func run(_ options: Options) throws(LogError) -> [Result] {
        let pool = makeEnvelopes(count: 16_384)
        var results: [Result] = []
        for codec in options.codecs {
            let directory = options.directory + "/" + codec.rawValue
            try? FileManager.default.removeItem(atPath: directory)
            var configuration = LogConfiguration(directory: directory, node: "bench")
            configuration.codec = codec
            configuration.durability = options.durability
            configuration.groupCommitDelay = options.groupCommitDelay
            configuration.compressionLevel = options.compressionLevel
            configuration.compressionThreads = options.compressionThreads
            var result = try measureAppends(configuration, pool: pool, options: options)
            if options.recoverySegmentBytes > 0 {
                let recovered = try recovery(
                    configuration, pool: pool, bytes: options.recoverySegmentBytes, runs: 1, cold: false)
                (result.recoverySeconds, result.recoveredSegmentBytes) = (recovered.seconds[0], recovered.segmentBytes)
            }
            try? FileManager.default.removeItem(atPath: directory)
            results.append(result)
        }
        return results
    }

    /// The results as a table.
    package static func render(_ results: [Result], options: Options) -> String {
        var out =
            "event log benchmark: \(options.threads) threads, \(options.recordsPerAppend) records/append, "
            + "durability \(options.durability), commit delay \(options.groupCommitDelay), level \(options.compressionLevel), "
            + "\(options.compressionThreads) compressor threads, \(options.usesNDJSON ? "append(ndjson:)" : "append([[UInt8]])"), "
            + "\(ProcessInfo.processInfo.activeProcessorCount) cores\n"
        for result in results {
            out +=
                "\(result.codec.rawValue): \(result.events) events in \(fmt(result.seconds)) s = "
                + "\(Int(result.eventsPerSecond)) events/s, \(fmt(result.megabytesPerSecond)) MB/s NDJSON, "
                + "ratio \(fmt(result.compressionRatio))x, \(result.frames) frames "
                + "(avg \(result.events / max(1, result.frames)) events/frame), "
                + "CPU \(fmt(result.cpuMicrosPerEvent)) us/event (\(Int(1e6 / max(0.001, result.cpuMicrosPerEvent))) events per CPU-second)"
            if let seconds = result.recoverySeconds, let bytes = result.recoveredSegmentBytes {
                out += "; recovery of a \(bytes >> 20) MiB open segment: \(fmt(seconds)) s"
            }
            out += "\n"
        }
        return out
    }

    private static func measureAppends(_ configuration: LogConfiguration, pool: [[UInt8]], options: Options)
        throws(LogError) -> Result
    {
        let writer = try LogWriter(configuration: configuration)
        let perThread = options.events / options.threads / options.recordsPerAppend
        let failures = Atomic<Int>(0)
        let finished = DispatchSemaphore(value: 0)
        let cpuStart = processCPUSeconds()
        let start = ContinuousClock.now
        for thread in 0..<options.threads {
            Thread {
                var cursor = thread * 997
                var records: [[UInt8]] = []
                records.reserveCapacity(options.recordsPerAppend)
                var ndjson: [UInt8] = []
                for _ in 0..<perThread {
                    records.removeAll(keepingCapacity: true)
                    ndjson.removeAll(keepingCapacity: true)
                    for _ in 0..<options.recordsPerAppend {
                        if options.usesNDJSON {
                            ndjson += pool[cursor % pool.count]
                            ndjson.append(10)
                        } else {
                            records.append(pool[cursor % pool.count])
                        }
                        cursor += 1
                    }
                    let appended: Void? =
                        options.usesNDJSON ? (try? writer.append(ndjson: ndjson)) : (try? writer.append(records))
                    if appended == nil { failures.wrappingAdd(1, ordering: .relaxed) }
                }
                finished.signal()
            }.start()
        }
        for _ in 0..<options.threads { finished.wait() }
        let elapsed = ContinuousClock.now - start
        let cpu = processCPUSeconds() - cpuStart
        let frames = writer.framesCommitted
        writer.close()
        if failures.load(ordering: .relaxed) > 0 { throw .unavailable(reason: "appends failed during the benchmark") }
        let events = perThread * options.threads * options.recordsPerAppend
        let averageLength = pool.reduce(0) { $0 + $1.count + 1 } / pool.count
        let disk = try FileSystem.diskUsage(of: configuration.nodeDirectory)
        return Result(
            codec: configuration.codec, events: events, seconds: seconds(elapsed),
            ndjsonBytes: Int64(events * averageLength), diskBytes: disk, frames: frames, cpuSeconds: cpu)
    }

    /// What `recovery` measured.
    package struct RecoveryRun: Sendable {
        /// Seconds of each writer start-up.
        package var seconds: [Double]
        /// Size of the open segment before the torn frame was added.
        package var segmentBytes: Int64
        /// Bytes each start-up cut from the end (the torn frame; 0 would mean it was not found).
        package var cutBytes: [Int64]
    }

    /// Start-up recovery of one full open segment: fills a segment of about `bytes` with `pool`'s
    /// records and closes the writer; then, `runs` times, appends a torn frame (the first bytes of
    /// the segment's first frame, as a crash in the middle of a write leaves), evicts the segment
    /// from the page cache when `cold` (as after a power cut; `POSIX_FADV_DONTNEED` on the synced
    /// file) and times a writer start-up, which checks every frame's checksum and cuts the torn one.
    package static func recovery(
        _ base: LogConfiguration, pool: [[UInt8]], bytes: Int64, runs: Int, cold: Bool
    ) throws(LogError) -> RecoveryRun {
        var configuration = base
        configuration.directory = base.directory + "-recovery"
        configuration.maxSegmentBytes = bytes + (1 << 20)
        configuration.durability = .interval(.seconds(1))
        configuration.groupCommitDelay = .zero
        // No preallocated zeros: the fill stops on the file's size, which is then all frames.
        configuration.preallocationBytes = 0
        try? FileManager.default.removeItem(atPath: configuration.directory)
        defer { try? FileManager.default.removeItem(atPath: configuration.directory) }
        let writer = try LogWriter(configuration: configuration)
        var written: Int64 = 0
        var cursor = 0
        while written < bytes - (256 << 10) {
            let chunk = (0..<2000).map { pool[($0 + cursor) % pool.count] }
            cursor += 2000
            try writer.append(chunk)
            written = try FileSystem.diskUsage(of: configuration.nodeDirectory)
        }
        writer.close()
        guard let id = try FileSystem.segmentIDs(in: configuration.nodeDirectory).last else {
            throw .unavailable(reason: "the recovery benchmark wrote no segment")
        }
        let path = configuration.nodeDirectory + "/" + SegmentFormat.fileName(segment: id)
        let size = try FileSystem.status(path)?.size ?? 0
        var result = RecoveryRun(seconds: [], segmentBytes: size, cutBytes: [])
        for _ in 0..<max(1, runs) {
            try appendTornFrame(path: path)
            if cold { evictFromPageCache(path) }
            let start = ContinuousClock.now
            let recovered = try LogWriter(configuration: configuration)
            let elapsed = ContinuousClock.now - start
            recovered.close()
            result.seconds.append(seconds(elapsed))
            result.cutBytes.append(size + tornFrameBytes - (try FileSystem.status(path)?.size ?? 0))
        }
        return result
    }

    /// Bytes of the torn frame `recovery` adds before each start-up.
    package static let tornFrameBytes: Int64 = 200

    /// Appends the first `tornFrameBytes` bytes of the file (the start of its first frame: a good
    /// prefix whose frame runs past the end of the file) and syncs.
    private static func appendTornFrame(path: String) throws(LogError) {
        let fd = open(path, O_RDWR)
        guard fd >= 0 else { throw .io(call: "open", errno: errno, path: path) }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: Int(tornFrameBytes))
        let end = lseek(fd, 0, SEEK_END)
        let ok =
            head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) } == Int(tornFrameBytes)
            && head.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, end) } == Int(tornFrameBytes)
        guard ok, fdatasync(fd) == 0 else { throw .io(call: "pwrite", errno: errno, path: path) }
    }

    /// Asks the kernel to drop the file's (clean) pages from the page cache.
    private static func evictFromPageCache(_ path: String) {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return }
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
        close(fd)
    }

    /// `count` realistic envelopes of about 400 bytes, all different (ids, devices, times, data).
    package static func makeEnvelopes(count: Int) -> [[UInt8]] {
        var random = SplitMix64(seed: 42)
        let names = ["app_open", "purchase", "sign_up", "add_to_cart", "view_item", "share", "level_complete"]
        let apps = ["app_7Hq2", "app_Zk91", "app_p0Lm"]
        var envelopes: [[UInt8]] = []
        envelopes.reserveCapacity(count)
        for index in 0..<count {
            let hex = String(random.next(), radix: 16) + String(random.next(), radix: 16)
            let device = String(random.next() % 200_000, radix: 16)
            let millis = 1_780_000_000_000 + Int64(index) * 37
            let time = formatMicros(millis * 1000)
            let received = formatMicros((millis + Int64(random.next() % 900)) * 1000)
            let name = names[Int(random.next() % UInt64(names.count))]
            let platform = random.next() % 3 == 0 ? "android" : "ios"
            let click = random.next() % 4 == 0 ? "\"clk_\(String(random.next() % 1_000_000, radix: 36))\"" : "null"
            let amount = random.next() % 10_000
            let line =
                #"{"v":1,"id":"h:\#(hex)","app":"\#(apps[index % apps.count])","kind":"event","time":"\#(time)","received_at":"\#(received)","clock":"ok","name":"\#(name)","device":"\#(device)-5c1e-4a8e-9d2b-\#(device)","platform":"\#(platform)","sdk":"\#(platform)/1.0.\#(index % 4)","client_ts":"\#(time)","attribution":{"install_click_id":\#(click),"open_click_id":null,"open_type":"organic"},"data":{"amount":\#(amount),"currency":"EUR","item":"sku-\#(amount % 300)"}}"#
            envelopes.append(Array(line.utf8))
        }
        return envelopes
    }

    /// User + system CPU seconds of this process so far.
    private static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private static func fmt(_ value: Double) -> String { String(format: "%.2f", value) }
}

/// A small deterministic random generator (SplitMix64), so benchmark data is the same every run
/// (also the benchmark command's body generator, the loader benchmark's world and the tests'
/// `SeededGenerator`).
package struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    /// A generator whose sequence is fixed by `seed`.
    package init(seed: UInt64) { state = seed }
    /// The next 64 random bits.
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
