import Glibc
import Synchronization

/// How long the log waits before an append counts as durable.
package enum Durability: Sendable, Equatable {
    /// Every frame is `fdatasync`ed before its appends return (default): acknowledged means on disk.
    case fsync
    /// Appends return after `write`; the writer syncs at most this long after a write. A crash of
    /// the machine (not of the process) can lose up to this window of acknowledged records.
    case interval(Duration)
}

/// The clocks the log uses (injectable for tests): the wall clock for frame timestamps, and a
/// steady one for what is measured in time elapsed (the interval sync, a segment's age, how often
/// the disk is re-measured). Until 2026-12-05 the wall clock measured those too: stepped back by an
/// NTP correction or a VM resumed, an interval sync waited as long as the step (the acknowledged
/// records of `--durability interval:100ms` stayed unsynced meanwhile) and the open segment aged
/// that much later.
package struct LogClock: Sendable {
    /// Microseconds since the Unix epoch.
    package let now: @Sendable () -> Int64
    /// Microseconds on a clock that never steps (any origin).
    package let elapsed: @Sendable () -> Int64

    /// A clock reading `now` for both.
    package init(now: @escaping @Sendable () -> Int64) {
        self.now = now
        self.elapsed = now
    }

    /// A clock reading `now` for timestamps and `elapsed` for durations.
    package init(now: @escaping @Sendable () -> Int64, elapsed: @escaping @Sendable () -> Int64) {
        self.now = now
        self.elapsed = elapsed
    }

    /// The system's real-time clock, and its monotonic clock for durations.
    package static let system = LogClock(
        now: {
            var spec = timespec()
            clock_gettime(CLOCK_REALTIME, &spec)
            return Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1000
        },
        elapsed: {
            var spec = timespec()
            clock_gettime(CLOCK_MONOTONIC, &spec)
            return Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1000
        })
}

/// A clock tests move by hand.
package final class ManualClock: Sendable {
    private let micros: Atomic<Int64>
    /// Starts at `start` microseconds since the epoch.
    package init(start: Int64 = 1_780_000_000_000_000) { micros = Atomic(start) }
    /// Moves the clock forward.
    package func advance(by duration: Duration) { micros.wrappingAdd(duration.microseconds, ordering: .relaxed) }
    /// The clock as a `LogClock`.
    package var clock: LogClock { LogClock { [self] in self.micros.load(ordering: .relaxed) } }
}

extension Duration {
    /// Whole microseconds in this duration.
    package var microseconds: Int64 {
        components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000
    }
}

/// Configuration of one log (events or dead letters) of one node.
package struct LogConfiguration: Sendable {
    /// Parent directory of the node directories, e.g. `<data>/segments` or `<data>/deadletter`.
    package var directory: String
    /// This ingest node's name; segments live in `<directory>/<node>/`. Default `node-1`.
    package var node: String = "node-1"
    /// Codec of new frames. Default zstd.
    package var codec: Codec = .zstd
    /// zstd level (-7...19; levels below 1 are zstd's fast levels, with Huffman-coded literals kept
    /// on) or zlib level (1...9, clamped). Default 1. See docs/event-log.md for the ratio/speed table.
    package var compressionLevel: Int = 1
    /// Threads compressing frames in parallel (frames are still written and acknowledged in
    /// order, by one committer thread). Default 2; 1...8.
    package var compressionThreads: Int = 2
    /// A segment is sealed before it would grow past this many bytes. Default 128 MiB.
    package var maxSegmentBytes: Int64 = 128 * 1024 * 1024
    /// A segment is sealed at the first commit after it is this old. Default 300 s.
    package var maxSegmentAge: Duration = .seconds(300)
    /// A group commit starts once this many uncompressed bytes wait. Default 256 KiB.
    package var groupCommitBytes: Int = 256 * 1024
    /// ... or once the oldest waiting append has waited this long. Default 2 ms.
    package var groupCommitDelay: Duration = .milliseconds(2)
    /// Whether `groupCommitDelay` also ends once as many appends wait as the batch taken before
    /// held: under concurrent load the wait gathers the clients the last group answered (fewer,
    /// larger groups), while a lone or few appenders are not held for company that is not coming.
    /// Default false (the full delay).
    package var groupCommitDelayIsAdaptive = false

    /// How `serve` and `run` gather group commits: an adaptive delay of at most 200 µs (fewer,
    /// larger groups under concurrent load, nothing added for a lone client; measured in
    /// docs/ingest-performance.md, "An adaptive commit delay"). The benchmark server uses it too.
    package mutating func useServingCommitDelay() {
        groupCommitDelay = .microseconds(200)
        groupCommitDelayIsAdaptive = true
    }
    /// The most uncompressed bytes one frame is made from (plus the append that reaches it): when
    /// appends arrive faster than the compressors take them, the waiting batch is closed here and
    /// the next appends start another, so a deep queue becomes several frames of about this size
    /// for the compressors to share, instead of one frame of the whole queue (one compressor busy,
    /// buffers too large to keep allocated again for every frame: without the cap the writer made
    /// 40 % fewer events per second with 2,048 requests of 100 events in flight than with 512).
    /// Default 8 MiB (`groupCommitBytes` when that is larger).
    package var maxBatchBytes: Int = 8 * 1024 * 1024
    /// When appends count as durable. Default `.fsync`.
    package var durability: Durability = .fsync
    /// Fsync durability: `fdatasync` calls in flight at once. 1: the committer syncs each group
    /// itself. 2 or more: each on its own sync thread; the committer writes the next group while
    /// earlier ones are being synced, and groups are still acknowledged in write order. Default 1
    /// (one sync at a time); 1...8. Two measured faster under heavy machine load but stalled the
    /// half-load p99 (120-200 ms in 3 of 5 runs) on a quiet one: docs/event-log.md, "Syncs in flight".
    package var syncsInFlight: Int = 1

    /// The writer's sync threads: `syncsInFlight` with fsync durability and more than one in
    /// flight, else none (the committer syncs).
    var syncThreads: Int { durability == .fsync && syncsInFlight > 1 ? syncsInFlight : 0 }
    /// The open segment is extended ahead of the frames with written zeros, this many bytes at a
    /// time, by a thread of its own (off the acknowledgement path); frames are then written into
    /// allocated space of a durable size, so their `fdatasync` writes no inode. The zero tail is cut
    /// off when the segment is sealed or the writer closes, and by recovery after a crash. Zeros
    /// stay within `maxSegmentBytes` and the headroom of `maxDiskBytes`. Default 4 MiB; 0 turns it
    /// off. See docs/event-log.md, "Preallocation".
    package var preallocationBytes: Int64 = 4 << 20
    /// Appends fail with `diskFull` once the node's segments use this many bytes. Default nil (no cap).
    package var maxDiskBytes: Int64? = nil
    /// Uncompressed bytes that may wait for the writer; appends beyond block. Default 64 MiB.
    package var maxPendingBytes: Int = 64 * 1024 * 1024
    /// How long an append blocks on a full queue before failing with `unavailable`. Default 1 s.
    package var enqueueTimeout: Duration = .seconds(1)
    /// After a failed commit the log reports not writable for this long (Retry-After). Default 1 s.
    package var retryAfter: Duration = .seconds(1)
    /// The largest uncompressed frame; one append must fit. Default and maximum 64 MiB.
    package var maxFrameBytes: Int = SegmentFormat.maxFrameBytes
    /// Wall clock for ages and frame timestamps. Default the system clock.
    package var clock: LogClock = .system
    /// What the writer calls to sync a written group (fsync durability): 0 or the errno. Tests
    /// replace it to make a sync fail or slow; `fdatasync` otherwise.
    var groupSync: @Sendable (_ fd: Int32) -> Int32 = { fdatasync($0) == 0 ? 0 : errno }

    /// A configuration with defaults for everything but the directory.
    package init(directory: String, node: String = "node-1") {
        self.directory = directory
        self.node = node
    }

    /// The event log of `node` under a data directory: `<data>/segments/<node>/`.
    package static func events(dataDirectory: String, node: String = "node-1") -> LogConfiguration {
        LogConfiguration(directory: dataDirectory + "/segments", node: node)
    }

    /// The dead-letter log of `node` (rejected input, same format): `<data>/deadletter/<node>/`.
    package static func deadLetters(dataDirectory: String, node: String = "node-1") -> LogConfiguration {
        LogConfiguration(directory: dataDirectory + "/deadletter", node: node)
    }

    /// The directory holding this node's segments.
    package var nodeDirectory: String { directory + "/" + node }

    func validated() throws(LogError) -> LogConfiguration {
        guard !node.isEmpty, !node.contains("/"), node != ".", node != ".." else {
            throw .invalidConfiguration("node must be a plain name")
        }
        guard maxFrameBytes > 0, maxFrameBytes <= SegmentFormat.maxFrameBytes else {
            throw .invalidConfiguration("maxFrameBytes must be 1...\(SegmentFormat.maxFrameBytes)")
        }
        guard maxSegmentBytes > 0, groupCommitBytes > 0, maxBatchBytes > 0,
            maxPendingBytes >= maxFrameBytes || maxPendingBytes > 0
        else {
            throw .invalidConfiguration("sizes must be positive")
        }
        guard (1...8).contains(compressionThreads) else {
            throw .invalidConfiguration("compressionThreads must be 1...8")
        }
        guard (0...(1 << 30)).contains(preallocationBytes) else {
            throw .invalidConfiguration("preallocationBytes must be 0...1 GiB")
        }
        guard (1...8).contains(syncsInFlight) else {
            throw .invalidConfiguration("syncsInFlight must be 1...8")
        }
        return self
    }
}
