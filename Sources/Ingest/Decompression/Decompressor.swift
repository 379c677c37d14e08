internal import CZlib
internal import CZstd

/// A request body's `Content-Encoding`, as ingest understands it.
package enum ContentEncoding: Sendable, Equatable {
    case identity, gzip, zstd

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
    /// `decompressedTooLarge` / `invalidEncoding`.
    package static func decode(_ body: [UInt8], encoding: ContentEncoding, limit: Int) throws(IngestError) -> [UInt8] {
        switch encoding {
        case .identity:
            if body.count > limit { throw .decompressedTooLarge(limit: limit) }
            return body
        case .gzip: return try gunzip(body, limit: limit)
        case .zstd: return try unzstd(body, limit: limit)
        }
    }

    /// Initial output capacity: bodies typically compress 5-10x.
    private static func initialCapacity(_ count: Int, limit: Int) -> Int {
        min(limit, max(4096, count * 8))
    }

    static func gunzip(_ body: [UInt8], limit: Int) throws(IngestError) -> [UInt8] {
        var stream = z_stream()
        // 16 + MAX_WBITS: expect a gzip header and trailer (RFC 1952).
        guard CZlib_inflateInit2(&stream, 16 + MAX_WBITS) == Z_OK else {
            throw .invalidEncoding(encoding: "gzip", reason: "inflateInit2 failed")
        }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: initialCapacity(body.count, limit: limit))
        var produced = 0
        var status = Z_OK
        var input = body
        let result: Int32 = input.withUnsafeMutableBufferPointer { inputBuffer in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = UInt32(inputBuffer.count)
            while true {
                if produced == output.count {
                    if output.count >= limit + 1 { return Z_BUF_ERROR }
                    output.append(contentsOf: repeatElement(0, count: min(output.count, limit + 1 - output.count)))
                }
                status = output.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress! + produced
                    stream.avail_out = UInt32(out.count - produced)
                    let code = inflate(&stream, Z_NO_FLUSH)
                    produced = out.count - Int(stream.avail_out)
                    return code
                }
                if status == Z_STREAM_END { return status }
                if status != Z_OK { return status }
                if stream.avail_in == 0, stream.avail_out > 0 { return Z_DATA_ERROR }  // truncated
            }
        }
        if produced > limit { throw .decompressedTooLarge(limit: limit) }
        guard result == Z_STREAM_END else {
            if result == Z_BUF_ERROR, produced > limit { throw .decompressedTooLarge(limit: limit) }
            let reason = stream.msg.map { String(cString: $0) } ?? "truncated or corrupt stream"
            throw .invalidEncoding(encoding: "gzip", reason: reason)
        }
        guard stream.avail_in == 0 else {
            throw .invalidEncoding(encoding: "gzip", reason: "trailing bytes after the gzip stream")
        }
        output.removeSubrange(produced...)
        return output
    }

    static func unzstd(_ body: [UInt8], limit: Int) throws(IngestError) -> [UInt8] {
        guard let context = ZSTD_createDCtx() else {
            throw .invalidEncoding(encoding: "zstd", reason: "ZSTD_createDCtx failed")
        }
        defer { ZSTD_freeDCtx(context) }
        var output = [UInt8](repeating: 0, count: initialCapacity(body.count, limit: limit))
        var produced = 0
        var failure: String?
        var finished = false
        body.withUnsafeBytes { inputBytes in
            var input = ZSTD_inBuffer(src: inputBytes.baseAddress, size: inputBytes.count, pos: 0)
            while true {
                if produced == output.count {
                    if output.count >= limit + 1 { return }
                    output.append(contentsOf: repeatElement(0, count: min(output.count, limit + 1 - output.count)))
                }
                let code = output.withUnsafeMutableBytes { out in
                    var buffer = ZSTD_outBuffer(dst: out.baseAddress, size: out.count, pos: produced)
                    let code = ZSTD_decompressStream(context, &buffer, &input)
                    produced = buffer.pos
                    return code
                }
                if ZSTD_isError(code) != 0 {
                    failure = String(cString: ZSTD_getErrorName(code))
                    return
                }
                if code == 0, input.pos == input.size {
                    finished = true
                    return
                }
                if input.pos == input.size, produced < output.count {
                    failure = "truncated stream"
                    return
                }
            }
        }
        if produced > limit { throw .decompressedTooLarge(limit: limit) }
        if let failure { throw .invalidEncoding(encoding: "zstd", reason: failure) }
        guard finished else { throw .invalidEncoding(encoding: "zstd", reason: "truncated stream") }
        output.removeSubrange(produced...)
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
