import CZlib
import CZstd

/// Compresses test bodies the way SDK HTTP clients would.
enum Compression {
    static func gzip(_ input: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        precondition(CZlib_deflateInit2(&stream, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK)
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(input.count))) + 64)
        var source = input
        let produced = source.withUnsafeMutableBufferPointer { inputBuffer in
            output.withUnsafeMutableBufferPointer { out in
                stream.next_in = inputBuffer.baseAddress
                stream.avail_in = UInt32(inputBuffer.count)
                stream.next_out = out.baseAddress
                stream.avail_out = UInt32(out.count)
                precondition(deflate(&stream, Z_FINISH) == Z_STREAM_END)
                return out.count - Int(stream.avail_out)
            }
        }
        return Array(output[..<produced])
    }

    static func zstd(_ input: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: ZSTD_compressBound(input.count))
        let size = output.withUnsafeMutableBytes { out in
            input.withUnsafeBytes { ZSTD_compress(out.baseAddress, out.count, $0.baseAddress, $0.count, 3) }
        }
        precondition(ZSTD_isError(size) == 0)
        return Array(output[..<size])
    }
}
