import Glibc
import Observability

/// Deletes segments that are both loaded and old; measures disk usage.
package enum LogRetention {
    private static let logger = Logger(label: "eventlog")

    /// Deletes the node's sealed segments that lie wholly before `loadedThrough` (the aggregator's
    /// checkpoint) and were last written at least `olderThan` ago. Never deletes the open (newest)
    /// segment, nor the checkpoint's segment or anything after it.
    /// - Parameters:
    ///   - directory: parent of node directories (`<data>/segments`).
    ///   - clock: wall clock for the age test (tests inject one).
    /// - Returns: the paths deleted, oldest first.
    /// - Throws: `.io` when the directory cannot be listed or a file cannot be removed.
    @discardableResult
    package static func deleteLoaded(
        directory: String, node: String, loadedThrough: LogPosition, olderThan: Duration, clock: LogClock = .system
    ) throws(LogError) -> [String] {
        let reader = try LogReader(directory: directory, node: node)
        let now = clock.now()
        var deleted: [String] = []
        for segment in try reader.segments() {
            guard !segment.isOpen, segment.id < loadedThrough.segment else { break }
            guard now - segment.modifiedAt >= olderThan.microseconds else { continue }
            try delete(segment)
            deleted.append(segment.path)
            logger.info("segment.deleted", ["segment.path": segment.path, "segment.bytes": "\(segment.bytes)"])
        }
        if !deleted.isEmpty { try deletionsDone(reader, directory: directory, node: node) }
        return deleted
    }

    /// Bounds a log nothing loads (the dead letters): deletes the node's sealed segments last
    /// written at least `olderThan` ago, then, oldest first, sealed segments while the node's
    /// segments together use more than `keepBytes`. Never deletes the open (newest) segment.
    /// - Parameters:
    ///   - olderThan: age limit; nil keeps segments whatever their age.
    ///   - keepBytes: size limit; nil keeps segments whatever their size.
    ///   - clock: wall clock for the age test (tests inject one).
    /// - Returns: the paths deleted, oldest first.
    /// - Throws: `.io` when the directory cannot be listed or a file cannot be removed.
    @discardableResult
    package static func prune(
        directory: String, node: String, olderThan: Duration?, keepBytes: Int64?, clock: LogClock = .system
    ) throws(LogError) -> [String] {
        let reader = try LogReader(directory: directory, node: node)
        let segments = try reader.segments()
        let now = clock.now()
        var total = segments.reduce(Int64(0)) { $0 + $1.bytes }
        var deleted: [String] = []
        for segment in segments where !segment.isOpen {
            let tooOld = olderThan.map { now - segment.modifiedAt >= $0.microseconds } ?? false
            let overSize = keepBytes.map { total > $0 } ?? false
            guard tooOld || overSize else { continue }
            try delete(segment)
            total -= segment.bytes
            deleted.append(segment.path)
            logger.info(
                "segment.pruned",
                [
                    "segment.path": segment.path, "segment.bytes": "\(segment.bytes)",
                    "reason": tooOld ? "age" : "size",
                ])
        }
        if !deleted.isEmpty { try deletionsDone(reader, directory: directory, node: node) }
        return deleted
    }

    private static func delete(_ segment: SegmentFile) throws(LogError) {
        if unlink(segment.path) != 0, errno != ENOENT { throw .io(call: "unlink", errno: errno, path: segment.path) }
    }

    /// After deleting segments: makes the deletions durable and updates the disk usage gauge.
    private static func deletionsDone(_ reader: LogReader, directory: String, node: String) throws(LogError) {
        try FileSystem.fsyncDirectory(reader.nodeDirectory)
        let usage = try FileSystem.diskUsage(of: reader.nodeDirectory)
        LogMetrics(configuration: LogConfiguration(directory: directory, node: node)).diskBytes.set(Double(usage))
    }

    /// Bytes used by the node's segments (for the disk usage metric and the cap).
    package static func diskUsage(directory: String, node: String) throws(LogError) -> Int64 {
        try FileSystem.diskUsage(of: directory + "/" + node)
    }
}
