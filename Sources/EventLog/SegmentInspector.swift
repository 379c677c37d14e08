import Glibc

/// One frame as the inspector saw it.
package struct FrameReport: Sendable, Equatable {
    /// Byte offset of the frame in the segment.
    package var offset: Int64
    /// Codec from the frame prefix (nil when the prefix is unreadable).
    package var codec: Codec?
    /// Records in the frame (0 when unreadable).
    package var records: Int
    /// Bytes on disk, prefix included (0 when unknown).
    package var frameBytes: Int
    /// NDJSON bytes after decompression.
    package var uncompressedBytes: Int
    /// Sequence number of the first record.
    package var firstSequence: UInt64?
    /// Writer clock at commit, microseconds since the epoch.
    package var committedAt: Int64?
    /// nil when the checksums, decompression and record count are all good; otherwise why not.
    package var problem: String?
}

/// One segment as the inspector saw it: totals, time range and (for `inspect`) every frame.
package struct SegmentReport: Sendable, Equatable {
    /// Segment file path.
    package var path: String
    /// Segment id, nil for a file whose name is not a segment name.
    package var id: UInt64?
    /// True when it is the newest segment of its node directory.
    package var isOpen: Bool
    /// File size.
    package var bytes: Int64
    /// Every frame and every damaged region, in file order.
    package var frames: [FrameReport]
    /// Bytes of zeros at the end of the open segment: space the writer preallocated ahead of its
    /// frames (cut off when the segment is sealed). Not damage; 0 for sealed segments, where zeros
    /// are reported as damage.
    package var zeroTailBytes: Int64 = 0
    /// Good frames.
    package var goodFrames: Int { frames.count { $0.problem == nil } }
    /// Records in good frames.
    package var records: Int { frames.reduce(0) { $0 + ($1.problem == nil ? $1.records : 0) } }
    /// NDJSON bytes in good frames.
    package var uncompressedBytes: Int { frames.reduce(0) { $0 + ($1.problem == nil ? $1.uncompressedBytes : 0) } }
    /// Smallest and largest `received_at` of the records (envelopes), as written.
    package var receivedAtRange: (first: String, last: String)? {
        guard let first = firstReceivedAt, let last = lastReceivedAt else { return nil }
        return (first, last)
    }
    var firstReceivedAt: String?
    var lastReceivedAt: String?
    /// Damage that counts against `verify`: anything but a torn tail of the open segment (which
    /// may be a write in progress, and is cut by the writer's recovery).
    package var damage: [FrameReport] {
        frames.enumerated().filter { index, frame in frame.problem != nil && index != incompleteTailIndex }
            .map(\.element)
    }

    /// The open segment's last frame when it is incomplete or fails its checksums: a write in
    /// progress, or a torn tail its writer cuts at its next start (docs/event-log.md, "Recovery").
    /// Not damage, but shown: `inspect` read it as DAMAGED while `verify` said only "ok".
    package var incompleteTail: FrameReport? { incompleteTailIndex.map { frames[$0] } }

    /// The index in `frames` of `incompleteTail`: the one rule for `damage`, `verify` and `inspect`.
    var incompleteTailIndex: Int? {
        guard isOpen, let last = frames.last, last.problem != nil else { return nil }
        return frames.count - 1
    }

    /// Same file, size, state and frames.
    package static func == (lhs: SegmentReport, rhs: SegmentReport) -> Bool {
        lhs.path == rhs.path && lhs.frames == rhs.frames && lhs.bytes == rhs.bytes && lhs.isOpen == rhs.isOpen
    }
}

/// The result of `verify`: every segment checked, and whether any is damaged.
package struct VerifyReport: Sendable {
    /// Every segment checked.
    package var segments: [SegmentReport]
    /// True when no segment has damage.
    package var isHealthy: Bool { segments.allSatisfy { $0.damage.isEmpty } }
    /// The process exit code for the CLI: 0 healthy, 1 damaged.
    package var exitCode: Int32 { isHealthy ? 0 : 1 }
}

/// `segments list | inspect | verify`: structured results plus a human-readable rendering, so the
/// CLI command is a thin call.
package enum SegmentInspector {
    /// Summaries of the segments of one node (`node` given) or of every node under `directory`.
    /// - Throws: `.io` when a directory or file cannot be read.
    package static func list(directory: String, node: String? = nil) throws(LogError) -> [SegmentReport] {
        var reports: [SegmentReport] = []
        for nodeDirectory in try nodeDirectories(directory: directory, node: node) {
            let ids = try FileSystem.segmentIDs(in: nodeDirectory)
            for id in ids {
                reports.append(
                    try inspect(path: nodeDirectory + "/" + SegmentFormat.fileName(segment: id), isOpen: id == ids.last)
                )
            }
        }
        return reports
    }

    /// Every frame of one segment file: offset, codec, record count, checksum status.
    /// - Parameter isOpen: whether it is the newest segment (nil: decided from its directory).
    package static func inspect(path: String, isOpen: Bool? = nil) throws(LogError) -> SegmentReport {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let id = SegmentFormat.segmentID(fileName: name)
        var open = isOpen ?? false
        if isOpen == nil, let id {
            open = try FileSystem.segmentIDs(in: FileSystem.parentDirectory(path)).last == id
        }
        let scanner = try FrameScanner(path: path)
        var report = SegmentReport(path: path, id: id, isOpen: open, bytes: scanner.size, frames: [])
        let decompressor = FrameDecompressor()
        var text: [UInt8] = []
        var offset: Int64 = 0
        scan: while true {
            switch try scanner.step(at: offset) {
            case .end:
                break scan
            case .unwritten:
                if open, try scanner.isZero(from: offset) {
                    report.zeroTailBytes = scanner.size - offset
                    break scan
                }
                let resumeAt = try scanner.resync(after: offset)
                let end = resumeAt ?? scanner.size
                report.frames.append(
                    FrameReport(
                        offset: offset, records: 0, frameBytes: Int(end - offset), uncompressedBytes: 0,
                        problem: "zero bytes inside the data"))
                guard let resumeAt else { break scan }
                offset = resumeAt
            case .frame(let metadata):
                var frame = FrameReport(
                    offset: offset, codec: metadata.codec, records: metadata.recordCount,
                    frameBytes: metadata.frameLength,
                    uncompressedBytes: metadata.uncompressedLength, firstSequence: metadata.firstSequence,
                    committedAt: metadata.committedAt)
                text.removeAll(keepingCapacity: true)
                frame.problem = scanner.body.withUnsafeBytes {
                    decompressor.decompress($0, metadata: metadata, appendingTo: &text)
                }
                if frame.problem == nil {
                    let lines = text.withUnsafeBytes { raw in (0..<raw.count).count { raw[$0] == 10 } }
                    if lines != metadata.recordCount { frame.problem = "record count mismatch (\(lines) lines)" }
                }
                if frame.problem == nil { noteReceivedAt(in: text, report: &report) }
                report.frames.append(frame)
                offset += Int64(metadata.frameLength)
            case .torn(let reason):
                report.frames.append(
                    FrameReport(
                        offset: offset, records: 0, frameBytes: Int(scanner.size - offset), uncompressedBytes: 0,
                        problem: reason))
                break scan
            case .damaged(let reason, let resumeAt, let lost):
                let end = resumeAt ?? scanner.size
                // With readable metadata the frame's records and first sequence are shown (they
                // are what the damage cost); `records` of the segment counts good frames only.
                report.frames.append(
                    FrameReport(
                        offset: offset, codec: lost?.codec, records: lost?.recordCount ?? 0,
                        frameBytes: Int(end - offset),
                        uncompressedBytes: lost?.uncompressedLength ?? 0, firstSequence: lost?.firstSequence,
                        committedAt: lost?.committedAt, problem: reason))
                guard let resumeAt else { break scan }
                offset = resumeAt
            }
        }
        return report
    }

    /// Checks every frame under `path`: a file, a node directory, or a parent of node directories.
    /// `exitCode` of the result is non-zero when anything is damaged.
    package static func verify(path: String) throws(LogError) -> VerifyReport {
        if let names = try FileSystem.list(path) {
            if names.contains(where: { SegmentFormat.segmentID(fileName: $0) != nil }) {
                let ids = try FileSystem.segmentIDs(in: path)
                var segments: [SegmentReport] = []
                for id in ids {
                    segments.append(
                        try inspect(path: path + "/" + SegmentFormat.fileName(segment: id), isOpen: id == ids.last))
                }
                return VerifyReport(segments: segments)
            }
            return VerifyReport(segments: try list(directory: path))
        }
        return VerifyReport(segments: [try inspect(path: path)])
    }

    private static func nodeDirectories(directory: String, node: String?) throws(LogError) -> [String] {
        if let node { return [directory + "/" + node] }
        var result: [String] = []
        for name in (try FileSystem.list(directory) ?? []).sorted()
        where try FileSystem.list(directory + "/" + name) != nil {
            result.append(directory + "/" + name)
        }
        return result
    }

    /// Updates the report's `received_at` range from the envelopes in `text` (a plain byte search).
    private static func noteReceivedAt(in text: [UInt8], report: inout SegmentReport) {
        let key = Array(#""received_at":""#.utf8)
        text.withUnsafeBytes { raw in
            var at = 0
            while at < raw.count, let hit = find(key, in: raw, from: at) {
                let start = hit + key.count
                guard let quote = memchr(raw.baseAddress! + start, 0x22, raw.count - start) else { return }
                let end = raw.baseAddress!.distance(to: UnsafeRawPointer(quote))
                let value = String(decoding: UnsafeRawBufferPointer(rebasing: raw[start..<end]), as: UTF8.self)
                if report.firstReceivedAt.map({ value < $0 }) ?? true { report.firstReceivedAt = value }
                if report.lastReceivedAt.map({ value > $0 }) ?? true { report.lastReceivedAt = value }
                // Skip to the next line: one received_at per envelope.
                guard let newline = memchr(raw.baseAddress! + end, 10, raw.count - end) else { return }
                at = raw.baseAddress!.distance(to: UnsafeRawPointer(newline)) + 1
            }
        }
    }

    /// The offset of `key` in `raw` at or after `from` (memchr for the first byte, then memcmp).
    private static func find(_ key: [UInt8], in raw: UnsafeRawBufferPointer, from: Int) -> Int? {
        var at = from
        while at + key.count <= raw.count {
            guard let hit = memchr(raw.baseAddress! + at, Int32(key[0]), raw.count - at) else { return nil }
            let index = raw.baseAddress!.distance(to: UnsafeRawPointer(hit))
            if index + key.count > raw.count { return nil }
            if memcmp(raw.baseAddress! + index, key, key.count) == 0 { return index }
            at = index + 1
        }
        return nil
    }
}
