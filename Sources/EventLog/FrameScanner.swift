import Glibc

/// Reads and checks the frames of one segment file, front to back.
/// Used by recovery (checksums only), readers (plus decompression) and the inspector.
final class FrameScanner {
    /// What lies at an offset.
    enum Step {
        /// A frame whose metadata and body checksums are good; the body is in `body`.
        case frame(FrameMetadata)
        /// The offset is the end of the file.
        case end
        /// Zero bytes where a frame would start: the open segment's preallocated tail (space the
        /// writer zero-filled ahead of its frames), i.e. the end of the written frames there.
        case unwritten
        /// The file ends inside a frame (a torn write, or a write still in progress).
        case torn(reason: String)
        /// The bytes at the offset are not a good frame; scanning may resume at `resumeAt`
        /// (the next offset holding a valid frame prefix), nil when none follows. `lost` is the
        /// frame's metadata when that passed its own checksum (only the body is bad): how many
        /// records, from which sequence number, the damage cost.
        case damaged(reason: String, resumeAt: Int64?, lost: FrameMetadata?)
    }

    let path: String
    let size: Int64
    private let fd: Int32
    private var prefix: [UInt8] = []
    /// The body of the last `.frame` step.
    private(set) var body: [UInt8] = []

    /// Opens `path` for reading; its size is fixed at this moment (later appends are not seen).
    init(path: String) throws(LogError) {
        self.path = path
        fd = try FileSystem.open(path, flags: O_RDONLY)
        do {
            size = try FileSystem.size(fd, path: path)
        } catch {
            close(fd)
            throw error
        }
    }

    deinit { close(fd) }

    /// Examines the frame at `offset`, reading its body into `body` when it is good.
    func step(at offset: Int64) throws(LogError) -> Step {
        if offset >= size { return .end }
        let available = try readPrefix(at: offset)
        // The file may have been cut back since it was opened (the writer truncating a failed group
        // on a full disk, the preallocator its zeros): where it now ends is its end. Until 2026-12-02
        // the bytes of the previous read left in the buffer were taken for a frame here, the reader
        // skipped such "damaged" frames up to the size seen at opening, and its checkpoint passed the
        // end of the file: the frames written there next were never loaded.
        if available == 0 { return .end }
        // No frame starts with a zero byte (both magics are non-zero): zeros are unwritten space.
        if prefix.withUnsafeBytes({ raw in raw.prefix(min(4, available)).allSatisfy { $0 == 0 } }) { return .unwritten }
        let metadata: FrameMetadata
        switch decodePrefix(available) {
        case .success(let value): metadata = value
        case .failure(.short): return .torn(reason: "file ends inside a frame prefix")
        case .failure(.invalid(let reason)):
            return .damaged(reason: reason, resumeAt: try resync(after: offset), lost: nil)
        }
        let bodyOffset = offset + Int64(SegmentFormat.prefixSize(metadata.codec))
        guard bodyOffset + Int64(metadata.bodyLength) <= size else {
            return .torn(reason: "file ends inside a frame body")
        }
        body.removeAll(keepingCapacity: true)
        let got = try FileSystem.read(fd, at: bodyOffset, count: metadata.bodyLength, into: &body, path: path)
        guard got == metadata.bodyLength else { return .torn(reason: "file ends inside a frame body") }
        let good =
            body.withUnsafeBytes { checksum(UnsafeRawBufferPointer(rebasing: $0[0..<metadata.bodyLength])) }
            == metadata.bodyChecksum
        if body.count > metadata.bodyLength { body.removeLast(body.count - metadata.bodyLength) }
        guard good else {
            return .damaged(
                reason: "body checksum mismatch", resumeAt: offset + Int64(metadata.frameLength), lost: metadata)
        }
        return .frame(metadata)
    }

    /// Reads the bytes a frame prefix may take at `offset` (fewer near the end of the file, or
    /// where the file was cut back since it was opened) into `prefix`; returns how many it read.
    private func readPrefix(at offset: Int64) throws(LogError) -> Int {
        let wanted = Int(min(Int64(SegmentFormat.maxPrefixSize), size - offset))
        return try FileSystem.read(fd, at: offset, count: wanted, into: &prefix, path: path)
    }

    /// Decodes the metadata of the `available` bytes `readPrefix` read.
    private func decodePrefix(_ available: Int) -> Result<FrameMetadata, FrameMetadata.DecodeFailure> {
        prefix.withUnsafeBytes { raw in
            Result { () throws(FrameMetadata.DecodeFailure) -> FrameMetadata in
                try FrameMetadata.decode(UnsafeRawBufferPointer(rebasing: raw[0..<available]))
            }
        }
    }

    /// The metadata of a frame prefix with a good checksum at `offset`, nil when there is none.
    private func metadata(at offset: Int64) throws(LogError) -> FrameMetadata? {
        guard offset < size else { return nil }
        return try? decodePrefix(try readPrefix(at: offset)).get()
    }

    /// True when a frame prefix with a good metadata checksum starts at `offset`.
    func hasFramePrefix(at offset: Int64) throws(LogError) -> Bool {
        try metadata(at: offset) != nil
    }

    /// True when every byte from `offset` to the end of the file is zero (a preallocated tail).
    func isZero(from offset: Int64) throws(LogError) -> Bool {
        try trailingZerosStart(after: offset) == offset
    }

    /// Where the data ends before a zero tail, found by a binary search over 4 KiB pages (the
    /// first page of zeros after which every page is zero: compressed frames never hold a page of
    /// zeros), then the last non-zero byte before it. The last frame's own trailing zero bytes, if
    /// any, are not counted: an estimate for lag metrics, not a frame boundary.
    func dataEnd() throws(LogError) -> Int64 {
        let page: Int64 = 4096
        let pages = (size + page - 1) / page
        var buffer: [UInt8] = []
        func zeroCount(_ index: Int64) throws(LogError) -> (got: Int, lastNonZero: Int?) {
            let count = Int(min(page, size - index * page))
            let got = try FileSystem.read(fd, at: index * page, count: count, into: &buffer, path: path)
            return (got, buffer.withUnsafeBytes { raw in raw.prefix(got).lastIndex { $0 != 0 } })
        }
        var low: Int64 = 0
        var high = pages
        while low < high {
            let middle = (low + high) / 2
            if try zeroCount(middle).lastNonZero == nil { high = middle } else { low = middle + 1 }
        }
        guard low > 0 else { return 0 }
        let (_, last) = try zeroCount(low - 1)
        return (low - 1) * page + Int64((last ?? -1) + 1)
    }

    /// Where the run of zeros that ends the file starts, at or after `offset` (the file size when
    /// its last byte is not zero); reads backwards from the end.
    func trailingZerosStart(after offset: Int64) throws(LogError) -> Int64 {
        var buffer: [UInt8] = []
        var end = size
        while end > offset {
            let start = max(offset, end - (1 << 20))
            let got = try FileSystem.read(fd, at: start, count: Int(end - start), into: &buffer, path: path)
            if let last = buffer.withUnsafeBytes({ raw in raw.prefix(got).lastIndex { $0 != 0 } }) {
                return start + Int64(last) + 1
            }
            end = start
        }
        return offset
    }

    /// The end of the frames whose prefixes are good, walking prefix to prefix from `offset`
    /// without reading bodies: a frame boundary (for `LogReader.endPosition`).
    func frameEnd(from offset: Int64) throws(LogError) -> Int64 {
        var at = offset
        while let metadata = try metadata(at: at), at + Int64(metadata.frameLength) <= size {
            at += Int64(metadata.frameLength)
        }
        return at
    }

    /// The first offset after `offset` where a valid frame prefix starts, or nil.
    func resync(after offset: Int64) throws(LogError) -> Int64? {
        let chunk = 1 << 20
        var buffer: [UInt8] = []
        var start = offset + 1
        while start < size {
            let count = Int(min(Int64(chunk + SegmentFormat.maxPrefixSize), size - start))
            let got = try FileSystem.read(fd, at: start, count: count, into: &buffer, path: path)
            let found: Int? = buffer.withUnsafeBytes { raw in
                for index in 0..<min(chunk, got) where raw[index] == 0x5D || raw[index] == 0x1F {
                    let candidate = UnsafeRawBufferPointer(rebasing: raw[index..<got])
                    if (try? FrameMetadata.decode(candidate)) != nil { return index }
                }
                return nil
            }
            if let found { return start + Int64(found) }
            start += Int64(chunk)
        }
        return nil
    }
}

extension FrameScanner {
    /// A frame found by a full scan.
    struct Entry {
        var offset: Int64
        var metadata: FrameMetadata
    }

    /// A problem found by a full scan.
    struct Problem {
        var offset: Int64
        var reason: String
        /// True when the problem runs to the end of the file (a torn or damaged tail).
        var isTail: Bool
    }

    /// What a full scan found.
    struct Scan {
        var frames: Int
        /// The end of the last good frame.
        var goodEnd: Int64
        var problems: [Problem]
        /// Where a zero tail (preallocated space) runs to the end of the file, nil when none.
        var zeroTailStart: Int64?
    }

    /// Checks every frame; `visit` sees each good frame with its body in `body`. Zeros that run
    /// to the end of the file are a zero tail, not a problem; zeros followed by other bytes are.
    func scanAll(_ visit: (Entry) throws(LogError) -> Void = { _ in }) throws(LogError) -> Scan {
        var offset: Int64 = 0
        var goodEnd: Int64 = 0
        var frames = 0
        var problems: [Problem] = []
        var zeroTailStart: Int64?
        scan: while true {
            switch try step(at: offset) {
            case .end:
                break scan
            case .unwritten:
                if try isZero(from: offset) {
                    zeroTailStart = offset
                    break scan
                }
                let resumeAt = try resync(after: offset)
                problems.append(Problem(offset: offset, reason: "zero bytes inside the data", isTail: resumeAt == nil))
                guard let resumeAt else { break scan }
                offset = resumeAt
            case .frame(let metadata):
                try visit(Entry(offset: offset, metadata: metadata))
                frames += 1
                offset += Int64(metadata.frameLength)
                goodEnd = offset
            case .torn(let reason):
                problems.append(Problem(offset: offset, reason: reason, isTail: true))
                break scan
            case .damaged(let reason, let resumeAt, _):
                problems.append(Problem(offset: offset, reason: reason, isTail: resumeAt == nil))
                guard let resumeAt else { break scan }
                offset = resumeAt
            }
        }
        // Damage followed only by more damage is part of the tail too.
        for index in problems.indices where problems[index].offset >= goodEnd { problems[index].isTail = true }
        return Scan(frames: frames, goodEnd: goodEnd, problems: problems, zeroTailStart: zeroTailStart)
    }
}
