internal import CZlib

/// gzip compression of request bodies (zlib with windowBits 31 = gzip wrapper).
enum Gzip {
    /// Compresses `input` into a gzip member; level 6, zlib's default.
    static func compress(_ input: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        // deflateInit2 is a macro; the CZlib shim makes it callable. 31 = 15-bit window + gzip header.
        let status = CZlib_deflateInit2(&stream, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY)
        precondition(status == Z_OK, "deflateInit2 failed")
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 32)
        var input = input
        let produced = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                let result = deflate(&stream, Z_FINISH)
                precondition(result == Z_STREAM_END, "deflate did not finish in one call")
                return target.count - Int(stream.avail_out)
            }
        }
        output.removeSubrange(produced...)
        return output
    }
}
