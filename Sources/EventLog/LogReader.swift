import Glibc

/// Reads one node's log from a position: across segments, up to the last complete frame of the
/// open segment, verifying every frame's checksums. Damaged frames are skipped and reported in
/// `LogBatch.damaged`. A reader holds no open files between calls; it is cheap to create.
package struct LogReader: Sendable {
    /// Parent directory of node directories (`<data>/segments`).
    package let directory: String
    /// Node name.
    package let node: String
    /// `<directory>/<node>`.
    package var nodeDirectory: String { directory + "/" + node }

    /// A reader of `<directory>/<node>`; the directory may not exist yet (reads are then empty).
    /// - Throws: `.invalidConfiguration` for a node name with a slash.
    package init(directory: String, node: String) throws(LogError) {
        guard !node.isEmpty, !node.contains("/") else { throw .invalidConfiguration("node must be a plain name") }
        self.directory = directory
        self.node = node
    }

    /// Up to `maxRecords` records and about `maxBytes` NDJSON bytes after `position` (nil: from
    /// the start), whole frames only (at least one frame when any is available, even if larger).
    /// Stops at the end of the open segment, or before a torn frame still being written there.
    /// - Throws: `.io` when a segment cannot be read.
    package func read(after position: LogPosition?, maxRecords: Int, maxBytes: Int) throws(LogError) -> LogBatch {
        let ids = try FileSystem.segmentIDs(in: nodeDirectory)
        var batch = LogBatch(next: position ?? LogPosition(segment: ids.first ?? 0, offset: 0))
        guard let openID = ids.last else { return batch }
        let decompressor = FrameDecompressor()
        for id in ids where id >= batch.next.segment {
            if id > batch.next.segment { batch.next = LogPosition(segment: id, offset: 0) }
            let path = nodeDirectory + "/" + SegmentFormat.fileName(segment: id)
            let scanner: FrameScanner
            do {
                scanner = try FrameScanner(path: path)
            } catch .io(_, let code, _) where code == ENOENT {
                continue  // deleted by retention meanwhile
            }
            let finished = try readSegment(
                scanner, id: id, isOpen: id == openID, into: &batch, decompressor: decompressor,
                maxRecords: maxRecords, maxBytes: maxBytes)
            if !finished { return batch }
            if id != openID, let later = ids.first(where: { $0 > id }) {
                batch.next = LogPosition(segment: later, offset: 0)
            }
        }
        return batch
    }

    /// Reads frames of one segment from `batch.next`; returns true when the segment is used up.
    private func readSegment(
        _ scanner: FrameScanner, id: UInt64, isOpen: Bool, into batch: inout LogBatch,
        decompressor: FrameDecompressor, maxRecords: Int, maxBytes: Int
    ) throws(LogError) -> Bool {
        var offset = batch.next.offset
        while true {
            var step = try scanner.step(at: offset)
            if isOpen, case .damaged(_, let resumeAt?, _) = step {
                // In the open segment a bad frame may be one the writer is still copying into its
                // zero tail. Only when a good frame prefix follows was it written completely (the
                // writer writes frames one after another), and then a second look decides.
                guard try scanner.hasFramePrefix(at: resumeAt) else { return false }
                step = try scanner.step(at: offset)
            }
            switch step {
            case .end:
                return !isOpen
            case .unwritten:
                if isOpen { return false }  // the zero tail: the end of the frames written so far
                // A sealed segment has no zero tail (it is cut off at sealing): report it.
                let resumeAt = try scanner.resync(after: offset)
                batch.damaged.append(
                    FrameDamage(segment: id, path: scanner.path, offset: offset, reason: "zero bytes inside the data"))
                guard let resumeAt else { return true }
                offset = resumeAt
                batch.next.offset = offset
            case .frame(let metadata):
                if !batch.isEmpty,
                    batch.count + metadata.recordCount > maxRecords
                        || batch.bytes.count + metadata.uncompressedLength > maxBytes
                {
                    return false
                }
                let start = batch.bytes.count
                let failure = scanner.body.withUnsafeBytes { body in
                    decompressor.decompress(body, metadata: metadata, appendingTo: &batch.bytes)
                }
                if let failure {
                    batch.damaged.append(
                        FrameDamage(segment: id, path: scanner.path, offset: offset, reason: failure, lost: metadata))
                } else {
                    let rangeStart = batch.ranges.count
                    if batch.indexRecords(from: start) != metadata.recordCount {
                        batch.ranges.removeSubrange(rangeStart...)
                        batch.bytes.removeSubrange(start...)
                        batch.damaged.append(
                            FrameDamage(
                                segment: id, path: scanner.path, offset: offset, reason: "record count mismatch",
                                lost: metadata))
                    } else {
                        if batch.firstSequence == nil { batch.firstSequence = metadata.firstSequence }
                        batch.newestCommittedAt = max(batch.newestCommittedAt ?? .min, metadata.committedAt)
                        batch.frames += 1
                    }
                }
                offset += Int64(metadata.frameLength)
                batch.next.offset = offset
            case .torn(let reason):
                if isOpen { return false }  // a frame still being written: wait for it
                batch.damaged.append(FrameDamage(segment: id, path: scanner.path, offset: offset, reason: reason))
                return true
            case .damaged(let reason, let resumeAt, let lost):
                if isOpen && resumeAt == nil { return false }  // possibly a write in progress at the tail
                batch.damaged.append(
                    FrameDamage(segment: id, path: scanner.path, offset: offset, reason: reason, lost: lost))
                guard let resumeAt else { return true }
                offset = resumeAt
                batch.next.offset = offset
            }
        }
    }

    /// The node's segments, oldest first; the last one is open.
    package func segments() throws(LogError) -> [SegmentFile] {
        let ids = try FileSystem.segmentIDs(in: nodeDirectory)
        var files: [SegmentFile] = []
        for id in ids {
            let path = nodeDirectory + "/" + SegmentFormat.fileName(segment: id)
            guard let status = try FileSystem.status(path) else { continue }
            files.append(
                SegmentFile(id: id, path: path, bytes: status.size, modifiedAt: status.modified, isOpen: id == ids.last)
            )
        }
        return files
    }

    /// The id of the newest segment (the open one), nil when there is none: one directory read, no
    /// file examined.
    package func newestSegmentID() throws(LogError) -> UInt64? {
        try FileSystem.segmentIDs(in: nodeDirectory).last
    }

    /// The end of the log as far as the file system shows it now: the open segment and the end of
    /// its last frame whose prefix is written (its zero tail, the writer's preallocation, is not
    /// part of the log).
    package func endPosition() throws(LogError) -> LogPosition? {
        guard let last = try segments().last else { return nil }
        let end: Int64
        do {
            end = try FrameScanner(path: last.path).frameEnd(from: 0)
        } catch .io(_, let code, _) where code == ENOENT {
            end = 0
        }
        return LogPosition(segment: last.id, offset: end)
    }

    /// Compressed bytes in the log after `position` (for a lag metric); all bytes for nil. The open
    /// segment counts up to the end of its data, without the zero tail (`FrameScanner.dataEnd`).
    package func bytesBehind(_ position: LogPosition?) throws(LogError) -> Int64 {
        var total: Int64 = 0
        for segment in try segments() {
            if let position, segment.id < position.segment { continue }
            var bytes = segment.bytes
            if segment.isOpen {
                do {
                    bytes = try FrameScanner(path: segment.path).dataEnd()
                } catch .io(_, let code, _) where code == ENOENT {
                    continue
                }
            }
            if let position, segment.id == position.segment {
                total += max(0, bytes - position.offset)
            } else {
                total += bytes
            }
        }
        return total
    }
}

/// One segment file as seen in the directory.
package struct SegmentFile: Sendable, Equatable {
    /// Segment id.
    package var id: UInt64
    /// Full path.
    package var path: String
    /// Size in bytes.
    package var bytes: Int64
    /// Last modification, microseconds since the epoch.
    package var modifiedAt: Int64
    /// True for the newest segment, which the writer may still append to.
    package var isOpen: Bool
}
