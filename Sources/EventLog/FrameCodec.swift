internal import CZlib
internal import CZstd

/// Compresses frame bodies with one reused compression context (a `ZSTD_CCtx` or a zlib stream).
///
/// `@unchecked Sendable`: a C-handle owner; the log uses each instance from one thread at a time
/// (the writer thread, or the caller of a reader/inspector), never concurrently.
final class FrameCompressor: @unchecked Sendable {
    let codec: Codec
    private let level: Int32
    private var zstd: OpaquePointer?
    private var zlib: UnsafeMutablePointer<z_stream>?

    /// zstd's `ZSTD_c_literalCompressionMode` (`ZSTD_c_experimentalParam5` in zstd.h, only visible
    /// with ZSTD_STATIC_LINKING_ONLY, which the system module does not define) and `ZSTD_ps_enable`.
    private static let literalCompressionMode = ZSTD_cParameter(rawValue: 1002)
    private static let paramSwitchEnable: Int32 = 1
    /// The hash table size (log2 of entries) used at level 1.
    private static let levelOneHashLog: Int32 = 13

    /// Creates a compressor; `level` is the zstd level (-7...19; negative levels are zstd's fast
    /// levels) or the zlib level (1...9).
    init(codec: Codec, level: Int) throws(LogError) {
        self.codec = codec
        switch codec {
        case .zstd:
            self.level = Int32(clamping: level)
            guard let context = ZSTD_createCCtx() else { throw .unavailable(reason: "ZSTD_createCCtx failed") }
            zstd = context
            // Parameters stay on the context across frames (ZSTD_compress2 keeps them).
            _ = ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, self.level)
            if self.level == 1 {
                // Level 1's 64 KiB hash table (hashLog 14) costs ~9 % more CPU than a 32 KiB one for
                // 0.7 % of ratio on envelopes (6.20x -> 6.16x in 1 MiB frames, docs/event-log.md,
                // "Compression level"). Only the compressor's memory changes: the frames are the same
                // format (window size unchanged), so every reader decodes them as before.
                _ = ZSTD_CCtx_setParameter(context, ZSTD_c_hashLog, Self.levelOneHashLog)
            }
            if self.level < 1 {
                // Negative levels also skip Huffman coding of literals, which on envelopes costs a
                // third of the ratio (6.2x -> 4.2x) for little speed; keep it on (level -2: 6.1x
                // at ~1.12x level 1's speed, see docs/event-log.md). Best effort: a libzstd that
                // does not know the parameter just keeps its default.
                _ = ZSTD_CCtx_setParameter(context, Self.literalCompressionMode, Self.paramSwitchEnable)
            }
        case .gzip:
            self.level = Int32(min(max(level, 1), 9))
            let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
            stream.initialize(to: z_stream())
            // Raw deflate (negative window bits): the gzip header and trailer are written by the log.
            guard CZlib_deflateInit2(stream, self.level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK else {
                stream.deallocate()
                throw .unavailable(reason: "deflateInit2 failed")
            }
            zlib = stream
        }
    }

    deinit {
        if let zstd { ZSTD_freeCCtx(zstd) }
        if let zlib {
            deflateEnd(zlib)
            zlib.deallocate()
        }
    }

    /// The largest body `inputLength` bytes can compress to.
    func bound(for inputLength: Int) -> Int {
        switch codec {
        case .zstd: return ZSTD_compressBound(inputLength)
        case .gzip: return Int(deflateBound(zlib, uLong(inputLength))) + 8 + 64
        }
    }

    /// Compresses `input` into `output` (at least `bound(for:)` bytes) and returns the body length.
    func compress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws(LogError) -> Int {
        switch codec {
        case .zstd:
            let written = ZSTD_compress2(zstd, output.baseAddress, output.count, input.baseAddress, input.count)
            if ZSTD_isError(written) != 0 {
                throw .unavailable(reason: "zstd compression failed: " + String(cString: ZSTD_getErrorName(written)))
            }
            return written
        case .gzip:
            let stream = zlib!
            deflateReset(stream)
            stream.pointee.next_in = UnsafeMutablePointer(
                mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = uInt(input.count)
            stream.pointee.next_out = output.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = uInt(output.count - 8)
            guard deflate(stream, Z_FINISH) == Z_STREAM_END else { throw .unavailable(reason: "deflate failed") }
            var length = Int(stream.pointee.total_out)
            let trailer = [checksum(input), UInt32(truncatingIfNeeded: input.count)]
            for word in trailer {
                withUnsafeBytes(of: word.littleEndian) {
                    output.baseAddress!.advanced(by: length).copyMemory(from: $0.baseAddress!, byteCount: 4)
                }
                length += 4
            }
            return length
        }
    }
}

/// Decompresses frame bodies of either codec with reused contexts.
///
/// `@unchecked Sendable`: a C-handle owner used by one thread at a time.
final class FrameDecompressor: @unchecked Sendable {
    private var zstd: OpaquePointer?
    private var zlib: UnsafeMutablePointer<z_stream>?

    init() {}

    deinit {
        if let zstd { ZSTD_freeDCtx(zstd) }
        if let zlib {
            inflateEnd(zlib)
            zlib.deallocate()
        }
    }

    /// Decompresses `body` and appends exactly `metadata.uncompressedLength` bytes to `output`;
    /// returns a reason string when the body does not decode to exactly that.
    func decompress(_ body: UnsafeRawBufferPointer, metadata: FrameMetadata, appendingTo output: inout [UInt8])
        -> String?
    {
        let expected = metadata.uncompressedLength
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: expected))
        let failure: String? = output.withUnsafeMutableBytes { all in
            let target = UnsafeMutableRawBufferPointer(rebasing: all[start...])
            switch metadata.codec {
            case .zstd: return decompressZstd(body, into: target)
            case .gzip: return inflate(body, into: target)
            }
        }
        if failure != nil { output.removeLast(expected) }
        return failure
    }

    private func decompressZstd(_ body: UnsafeRawBufferPointer, into target: UnsafeMutableRawBufferPointer) -> String? {
        if zstd == nil { zstd = ZSTD_createDCtx() }
        guard let context = zstd else { return "ZSTD_createDCtx failed" }
        let size = ZSTD_getFrameContentSize(body.baseAddress, body.count)
        guard size == UInt64(target.count) else { return "zstd content size mismatch" }
        let written = ZSTD_decompressDCtx(context, target.baseAddress, target.count, body.baseAddress, body.count)
        if ZSTD_isError(written) != 0 { return "zstd: " + String(cString: ZSTD_getErrorName(written)) }
        return written == target.count ? nil : "zstd length mismatch"
    }

    private func inflate(_ body: UnsafeRawBufferPointer, into target: UnsafeMutableRawBufferPointer) -> String? {
        if zlib == nil {
            let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
            stream.initialize(to: z_stream())
            guard CZlib_inflateInit2(stream, -15) == Z_OK else {
                stream.deallocate()
                return "inflateInit2 failed"
            }
            zlib = stream
        }
        let stream = zlib!
        inflateReset(stream)
        guard body.count >= 8 else { return "gzip member too short" }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: body.baseAddress!.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(body.count - 8)
        // A zero-length target still needs a valid pointer for zlib.
        var scratch: UInt8 = 0
        let out =
            target.count > 0
            ? target.baseAddress!.assumingMemoryBound(to: Bytef.self) : withUnsafeMutablePointer(to: &scratch) { $0 }
        stream.pointee.next_out = out
        stream.pointee.avail_out = uInt(target.count)
        let status = CZlib.inflate(stream, Z_FINISH)
        guard status == Z_STREAM_END else { return "inflate failed (\(status))" }
        guard stream.pointee.avail_in == 0, Int(stream.pointee.total_out) == target.count else {
            return "gzip length mismatch"
        }
        let crc = UInt32(littleEndian: body.loadUnaligned(fromByteOffset: body.count - 8, as: UInt32.self))
        let size = UInt32(littleEndian: body.loadUnaligned(fromByteOffset: body.count - 4, as: UInt32.self))
        guard crc == checksum(UnsafeRawBufferPointer(target)), size == UInt32(truncatingIfNeeded: target.count) else {
            return "gzip trailer mismatch"
        }
        return nil
    }
}
