import Glibc
import Observability

/// Start-up check of a node's log: cuts a torn or corrupt tail off the open segment, syncs it, and
/// finds the next record sequence number and segment id.
enum Recovery {
    /// What recovery found and did.
    struct Result: Equatable {
        var nextSegmentID: UInt64
        var nextSequence: UInt64
        var diskBytes: Int64
        /// Bytes of torn or corrupt frames cut from the end of the open segment (0 when it was clean).
        var truncatedBytes: Int64
        /// Bytes of preallocated zeros cut from the end of the open segment (not logged: no data).
        var zeroTailBytes: Int64 = 0
        /// Frames with good checksums in the open segment.
        var framesChecked: Int
    }

    static let logger = Logger(label: "eventlog")

    /// Recovers `nodeDirectory` (created if missing).
    static func run(nodeDirectory: String) throws(LogError) -> Result {
        try FileSystem.makeDirectories(nodeDirectory)
        let ids = try FileSystem.segmentIDs(in: nodeDirectory)
        var result = Result(
            nextSegmentID: (ids.last ?? 0) + 1, nextSequence: 0, diskBytes: 0, truncatedBytes: 0, framesChecked: 0)
        guard let openID = ids.last else { return result }
        let path = nodeDirectory + "/" + SegmentFormat.fileName(segment: openID)
        let scanner = try FrameScanner(path: path)
        var lastFrame: FrameMetadata?
        let scan = try scanner.scanAll { entry in lastFrame = entry.metadata }
        result.framesChecked = scan.frames
        for problem in scan.problems where !problem.isTail {
            logger.warning(
                "segment.damaged_frame_kept",
                ["segment.path": path, "frame.offset": "\(problem.offset)", "reason": problem.reason])
        }
        if scan.goodEnd < scanner.size {
            // A zero tail is the writer's preallocation: cut silently. Anything between the last
            // good frame and it is a torn or corrupt frame: cut and logged.
            var dataEnd = scanner.size
            if let start = scan.zeroTailStart {
                dataEnd = start
            } else {
                dataEnd = try scanner.trailingZerosStart(after: scan.goodEnd)
            }
            result.zeroTailBytes = scanner.size - dataEnd
            result.truncatedBytes = dataEnd - scan.goodEnd
            if result.truncatedBytes > 0 {
                let reason = scan.problems.first(where: { $0.isTail })?.reason ?? "trailing bytes"
                logger.warning(
                    "segment.tail_truncated",
                    [
                        "segment.path": path, "cut.offset": "\(scan.goodEnd)", "cut.bytes": "\(result.truncatedBytes)",
                        "zero_tail.bytes": "\(result.zeroTailBytes)", "reason": reason,
                    ])
            }
        }
        // Synced whether or not it was cut: a writer with interval durability killed between an
        // answer and its sync left frames that were acknowledged and only in the page cache, and
        // the new writer starts a new segment without ever syncing this one (until 2026-12-04
        // they then waited for the kernel's write-back instead of the configured interval).
        let fd = try FileSystem.open(path, flags: O_WRONLY)
        defer { close(fd) }
        if scan.goodEnd < scanner.size {
            try FileSystem.syscall("ftruncate", path: path) { ftruncate(fd, off_t(scan.goodEnd)) }
        }
        try FileSystem.syscall("fdatasync", path: path) { fdatasync(fd) }
        if let lastFrame {
            result.nextSequence = lastFrame.firstSequence + UInt64(lastFrame.recordCount)
        } else {
            result.nextSequence = try lastSequence(before: openID, ids: ids, nodeDirectory: nodeDirectory)
        }
        result.diskBytes = try FileSystem.diskUsage(of: nodeDirectory)
        return result
    }

    /// The next sequence number after the newest good frame of the segments before `openID`.
    private static func lastSequence(before openID: UInt64, ids: [UInt64], nodeDirectory: String) throws(LogError)
        -> UInt64
    {
        for id in ids.reversed() where id < openID {
            let scanner = try FrameScanner(path: nodeDirectory + "/" + SegmentFormat.fileName(segment: id))
            var lastFrame: FrameMetadata?
            _ = try scanner.scanAll { entry in lastFrame = entry.metadata }
            if let lastFrame { return lastFrame.firstSequence + UInt64(lastFrame.recordCount) }
        }
        return 0
    }
}
