/// A place in one node's log: the byte offset of a frame boundary in a segment.
/// Positions order by segment, then offset; a reader resumes reading at exactly this frame.
package struct LogPosition: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// Segment id.
    package var segment: UInt64
    /// Byte offset of the next frame in that segment.
    package var offset: Int64

    /// A position at `offset` of `segment`.
    package init(segment: UInt64, offset: Int64) {
        self.segment = segment
        self.offset = offset
    }

    /// Earlier segment first, then smaller offset.
    package static func < (lhs: LogPosition, rhs: LogPosition) -> Bool {
        (lhs.segment, lhs.offset) < (rhs.segment, rhs.offset)
    }

    /// `segment:offset`, e.g. `7:1048576`.
    package var description: String { "\(segment):\(offset)" }

    /// Parses `segment:offset` as printed by `description`.
    package init?(parsing text: String) {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let segment = UInt64(parts[0]), let offset = Int64(parts[1]), offset >= 0 else {
            return nil
        }
        self.init(segment: segment, offset: offset)
    }
}
