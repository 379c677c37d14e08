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
        /// The file ends inside a frame (a torn write, or a write still in progress).
        case torn(reason: String)
        /// The bytes at the offset are not a good frame; scanning may resume at `resumeAt`
        /// (the next offset holding a valid frame prefix), nil when none follows.
        case damaged(reason: String, resumeAt: Int64?)
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
        let available = Int(min(Int64(SegmentFormat.maxPrefixSize), size - offset))
        _ = try FileSystem.read(fd, at: offset, count: available, into: &prefix, path: path)
        let decoded = prefix.withUnsafeBytes { raw in
            Result { () throws(FrameMetadata.DecodeFailure) -> FrameMetadata in
                try FrameMetadata.decode(UnsafeRawBufferPointer(rebasing: raw[0..<available]))
            }
        }
        let metadata: FrameMetadata
        switch decoded {
        case .success(let value): metadata = value
        case .failure(.short): return .torn(reason: "file ends inside a frame prefix")
        case .failure(.invalid(let reason)): return .damaged(reason: reason, resumeAt: try resync(after: offset))
        }
        let bodyOffset = offset + Int64(SegmentFormat.prefixSize(metadata.codec))
        guard bodyOffset + Int64(metadata.bodyLength) <= size else {
            return .torn(reason: "file ends inside a frame body")
        }
        body.removeAll(keepingCapacity: true)
        _ = try FileSystem.read(fd, at: bodyOffset, count: metadata.bodyLength, into: &body, path: path)
        let good = body.withUnsafeBytes { checksum(UnsafeRawBufferPointer(rebasing: $0[0..<metadata.bodyLength])) } == metadata.bodyChecksum
        if body.count > metadata.bodyLength { body.removeLast(body.count - metadata.bodyLength) }
        guard good else {
            return .damaged(reason: "body checksum mismatch", resumeAt: offset + Int64(metadata.frameLength))
        }
        return .frame(metadata)
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

    /// Checks every frame; `visit` sees each good frame with its body in `body`.
    func scanAll(_ visit: (Entry) throws(LogError) -> Void = { _ in }) throws(LogError) -> (frames: Int, goodEnd: Int64, problems: [Problem]) {
        var offset: Int64 = 0
        var goodEnd: Int64 = 0
        var frames = 0
        var problems: [Problem] = []
        scan: while true {
            switch try step(at: offset) {
            case .end:
                break scan
            case .frame(let metadata):
                try visit(Entry(offset: offset, metadata: metadata))
                frames += 1
                offset += Int64(metadata.frameLength)
                goodEnd = offset
            case .torn(let reason):
                problems.append(Problem(offset: offset, reason: reason, isTail: true))
                break scan
            case .damaged(let reason, let resumeAt):
                problems.append(Problem(offset: offset, reason: reason, isTail: resumeAt == nil))
                guard let resumeAt else { break scan }
                offset = resumeAt
            }
        }
        // Damage followed only by more damage is part of the tail too.
        for index in problems.indices where problems[index].offset >= goodEnd { problems[index].isTail = true }
        return (frames, goodEnd, problems)
    }
}
