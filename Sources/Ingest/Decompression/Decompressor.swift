internal import CZlib
internal import CZstd

/// A request body's `Content-Encoding`, as ingest understands it.
package enum ContentEncoding: Sendable, Equatable {
    case identity, gzip, zstd

    /// `gzip` or `zstd`; nil for identity (as dead letters name a body kept compressed).
    var name: String? {
        switch self {
        case .identity: nil
        case .gzip: "gzip"
        case .zstd: "zstd"
        }
    }

    /// Parses a `Content-Encoding` header value; nil/empty means identity. Throws
    /// `unsupportedEncoding` for anything else (including stacked encodings).
    package init(header: String?) throws(IngestError) {
        guard let header else {
            self = .identity
            return
        }
        switch header.trimmingWhitespace().lowercased() {
        case "", "identity": self = .identity
        case "gzip", "x-gzip": self = .gzip
        case "zstd": self = .zstd
        default: throw .unsupportedEncoding(String(header.prefix(64)))
        }
    }
}

/// Inflates request bodies with a hard output limit: a decompression bomb stops as soon as the
/// output would pass `limit`, having never held more than `limit` bytes.
package enum Decompressor {
    /// Decodes `body` per `encoding`, returning at most `limit` bytes or throwing
    /// `decompressedTooLarge` / `invalidEncoding`. gzip and zstd bodies may hold several members or
    /// frames, one after another; they decode to their concatenation, under the same limit.
    package static func decode(_ body: [UInt8], encoding: ContentEncoding, limit: Int) throws(IngestError) -> [UInt8] {
        switch encoding {
        case .identity:
            if body.count > limit { throw .decompressedTooLarge(limit: limit) }
            return body
        case .gzip: return try gunzip(body, limit: limit)
        case .zstd: return try unzstd(body, limit: limit)
        }
    }

    /// Size of the scratch buffer each decompression step writes into before it is appended.
    private static let stepBytes = 256 * 1024

    /// Appends a step's output, growing the buffer by doubling but never past `limit` (the
    /// array's own doubling took a 10 MiB body's buffer to 16 MiB, 24 MiB during the last copy).
    private static func append(_ bytes: UnsafeRawBufferPointer, to output: inout [UInt8], limit: Int) {
        let needed = output.count + bytes.count
        if needed > output.capacity { output.reserveCapacity(max(needed, min(limit, output.capacity * 2))) }
        output.append(contentsOf: bytes)
    }

    static func gunzip(_ body: [UInt8], limit: Int) throws(IngestError) -> [UInt8] {
        var stream = z_stream()
        // 16 + MAX_WBITS: expect a gzip header and trailer (RFC 1952).
        guard CZlib_inflateInit2(&stream, 16 + MAX_WBITS) == Z_OK else {
            throw .invalidEncoding(encoding: "gzip", reason: "inflateInit2 failed")
        }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        output.reserveCapacity(min(limit, max(4096, body.count * 8)))
        let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: stepBytes)
        defer { scratch.deallocate() }
        var input = body
        var status = Z_OK
        var overLimit = false
        input.withUnsafeMutableBufferPointer { inputBuffer in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = UInt32(inputBuffer.count)
            while true {
                stream.next_out = scratch
                stream.avail_out = UInt32(stepBytes)
                status = inflate(&stream, Z_NO_FLUSH)
                let produced = stepBytes - Int(stream.avail_out)
                if output.count + produced > limit {
                    overLimit = true
                    return
                }
                append(UnsafeRawBufferPointer(start: scratch, count: produced), to: &output, limit: limit)
                if status == Z_STREAM_END, stream.avail_in >= 2, stream.next_in[0] == 0x1f, stream.next_in[1] == 0x8b {
                    // Another member (RFC 1952 2.2: a gzip file is a series of members; `cat a.gz b.gz`
                    // and some streaming writers make them): inflate it onto the same output.
                    status = inflateReset(&stream)
                    if status != Z_OK { return }
                    continue
                }
                if status != Z_OK { return }
                if stream.avail_in == 0, produced < stepBytes {
                    status = Z_DATA_ERROR  // input ended before the gzip trailer
                    return
                }
            }
        }
        if overLimit { throw .decompressedTooLarge(limit: limit) }
        guard status == Z_STREAM_END else {
            let reason = stream.msg.map { String(cString: $0) } ?? "truncated or corrupt stream"
            throw .invalidEncoding(encoding: "gzip", reason: reason)
        }
        guard stream.avail_in == 0 else {
            throw .invalidEncoding(encoding: "gzip", reason: "trailing bytes after the gzip stream")
        }
        return output
    }

    static func unzstd(_ body: [UInt8], limit: Int) throws(IngestError) -> [UInt8] {
        guard let context = ZSTD_createDCtx() else {
            throw .invalidEncoding(encoding: "zstd", reason: "ZSTD_createDCtx failed")
        }
        defer { ZSTD_freeDCtx(context) }
        var output: [UInt8] = []
        output.reserveCapacity(min(limit, max(4096, body.count * 8)))
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: stepBytes, alignment: 16)
        defer { scratch.deallocate() }
        var failure: String?
        var overLimit = false
        var finished = false
        body.withUnsafeBytes { inputBytes in
            var input = ZSTD_inBuffer(src: inputBytes.baseAddress, size: inputBytes.count, pos: 0)
            while true {
                var buffer = ZSTD_outBuffer(dst: scratch, size: stepBytes, pos: 0)
                let code = ZSTD_decompressStream(context, &buffer, &input)
                if ZSTD_isError(code) != 0 {
                    failure = String(cString: ZSTD_getErrorName(code))
                    return
                }
                if output.count + buffer.pos > limit {
                    overLimit = true
                    return
                }
                append(UnsafeRawBufferPointer(start: scratch, count: buffer.pos), to: &output, limit: limit)
                if code == 0, input.pos == input.size {
                    finished = true
                    return
                }
                if input.pos == input.size, buffer.pos < stepBytes {
                    failure = "truncated stream"  // a frame is incomplete and no input is left
                    return
                }
            }
        }
        if overLimit { throw .decompressedTooLarge(limit: limit) }
        if let failure { throw .invalidEncoding(encoding: "zstd", reason: failure) }
        guard finished else { throw .invalidEncoding(encoding: "zstd", reason: "truncated stream") }
        return output
    }
}

extension String {
    func trimmingWhitespace() -> Substring {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view.removeFirst() }
        while let last = view.last, last == " " || last == "\t" { view.removeLast() }
        return view
    }
}
