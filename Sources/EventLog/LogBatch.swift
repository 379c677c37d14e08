import Glibc

/// A frame a reader could not use: where it is and why. Readers skip it and report it, never silently.
package struct FrameDamage: Sendable, Equatable, CustomStringConvertible {
    /// Segment id.
    package var segment: UInt64
    /// Segment file path.
    package var path: String
    /// Byte offset of the damaged frame (or of the damaged bytes) in the segment.
    package var offset: Int64
    /// What is wrong (checksum mismatch, torn tail of a sealed segment, ...), followed by the
    /// records lost when the frame's metadata was readable: `body checksum mismatch (100 records,
    /// sequence 7...106, not loaded)`.
    package var reason: String

    /// Creates a report; `lost` is the damaged frame's metadata when it passed its own checksum.
    package init(segment: UInt64, path: String, offset: Int64, reason: String, lost: FrameMetadata? = nil) {
        self.segment = segment
        self.path = path
        self.offset = offset
        self.reason = reason + (lost.map { " (\(FrameDamage.lostRecords($0)), not loaded)" } ?? "")
    }

    /// `N records, sequence A...B` of a damaged frame's metadata (`1 record, sequence A`).
    package static func lostRecords(_ metadata: FrameMetadata) -> String {
        let count = metadata.recordCount
        let last = metadata.firstSequence &+ UInt64(max(count, 1)) &- 1
        return count == 1
            ? "1 record, sequence \(metadata.firstSequence)"
            : "\(count) records, sequence \(metadata.firstSequence)...\(last)"
    }

    /// `path offset N: reason`.
    package var description: String { "\(path) offset \(offset): \(reason)" }
}

/// Records read from the log: one flat NDJSON buffer plus the range of each record, so reading
/// allocates per batch, not per record.
package struct LogBatch: Sendable {
    /// The NDJSON bytes of every record, each followed by "\n".
    package var bytes: [UInt8] = []
    /// The range of each record in `bytes`, newline excluded.
    package var ranges: [Range<Int>] = []
    /// Where the next read continues (after the last frame returned or skipped).
    package var next: LogPosition
    /// Sequence number of the first record returned, nil when the batch is empty.
    package var firstSequence: UInt64?
    /// Writer clock of the newest frame returned, microseconds since the epoch.
    package var newestCommittedAt: Int64?
    /// Damaged frames skipped on the way.
    package var damaged: [FrameDamage] = []
    /// Frames returned.
    package var frames = 0

    /// Number of records.
    package var count: Int { ranges.count }
    /// True when no records were returned.
    package var isEmpty: Bool { ranges.isEmpty }
    /// Record `index` (without its newline).
    package subscript(index: Int) -> ArraySlice<UInt8> { bytes[ranges[index]] }
    /// Every record copied into its own array (convenient, allocates per record).
    package var records: [[UInt8]] { ranges.map { Array(bytes[$0]) } }

    /// Splits `bytes[from...]` at newlines into `ranges`; returns the number of records found.
    mutating func indexRecords(from start: Int) -> Int {
        var found = 0
        bytes.withUnsafeBytes { raw in
            var at = start
            while at < raw.count {
                let rest = raw.count - at
                guard let hit = memchr(raw.baseAddress! + at, 10, rest) else {
                    ranges.append(at..<raw.count)  // a last record without newline (not written by LogWriter)
                    found += 1
                    break
                }
                let end = raw.baseAddress!.distance(to: UnsafeRawPointer(hit))
                ranges.append(at..<end)
                found += 1
                at = end + 1
            }
        }
        return found
    }
}
