// On-disk format of the event log, and its invariants.
//
// Directory layout
// ----------------
//   <directory>/<node>/<20-digit segment id>.seg      e.g. segments/node-1/00000000000000000007.seg
// `directory` is `<data>/segments` for events and `<data>/deadletter` for rejected input; both use
// this same format. Segment ids start at 1 and only increase. The segment with the highest id is the
// *open* segment (the writer may still append to it); every other segment is *sealed* and never
// changes again. Only `LogWriter` creates segments and appends to the open one; only
// `LogRetention.deleteLoaded` deletes segments, and never the open one.
//
// Segment
// -------
// A segment is a plain concatenation of frames, no file header. An empty file is a valid segment.
// The open segment may end in a *zero tail*: bytes 0x00 (written zeros, part possibly a sparse
// hole) from the end of the last frame to the end of the file, space the writer preallocated
// (`SegmentPreallocator`). No frame starts with 0x00, so 00 00 00 00 where a frame would start
// means "end of the frames written so far". Sealed segments never have a zero tail.
// Each frame holds the NDJSON records of one group commit (each record followed by "\n"), so
// `zstdcat seg` or `zcat seg` prints the records: stock tools skip our metadata (see below).
//
// Frame = prefix (metadata) + body
// --------------------------------
// Codec zstd (default), prefix is a zstd *skippable frame*, 52 bytes:
//   0  u32 LE 0x184D2A5D            skippable-frame magic (zstd skips 0x184D2A50...5F)
//   4  u32 LE 44                    skippable payload size
//   8  44 bytes metadata            (below)
//   body: exactly one zstd frame (content size recorded, no zstd checksum: ours covers it).
// Codec gzip, prefix is a gzip member header with an FEXTRA field (RFC 1952), 60 bytes:
//   0  1F 8B 08 04                  ID1 ID2 CM=deflate FLG=FEXTRA
//   4  00 00 00 00 00 FF            MTIME=0 XFL=0 OS=255
//   10 u16 LE 48                    XLEN
//   12 'D' 'T' u16 LE 44            subfield id and length
//   16 44 bytes metadata            (below)
//   body: raw deflate stream + CRC32 + ISIZE (the rest of the gzip member); gzip ignores FEXTRA.
//
// Metadata (44 bytes, little-endian), identical for both codecs:
//   0  4  "DTLF"                    metadata magic
//   4  1  version = 1
//   5  1  codec: 1 = zstd, 2 = gzip
//   6  2  reserved, 0
//   8  8  u64 first record sequence number (per node log, starts at 0, +1 per record, gap-free)
//   16 4  u32 record count (>= 1)
//   20 4  u32 uncompressed length (NDJSON bytes including the newlines), <= maxFrameBytes
//   24 4  u32 body length (bytes following the prefix)
//   28 8  i64 committed at, microseconds since the Unix epoch (writer clock)
//   36 4  u32 body checksum: CRC-32 (zlib `crc32`, IEEE polynomial) of the body bytes
//   40 4  u32 metadata checksum: CRC-32 of metadata bytes 0..<40
//
// Invariants
// ----------
// - A frame is written with one `pwrite` at the end of the open segment's frames (into its zero
//   tail, or extending the file); the frames only ever grow by whole frames, except for a torn
//   tail left by a crash or a failed write.
// - The zero tail is cut off (and the size synced) before a segment is sealed, when the writer
//   closes, and by recovery (silently: it holds no data).
// - The writer never leaves a partial frame behind on purpose: on a write or fsync failure it
//   truncates back to the end of the last good frame and starts a new segment for the next frame.
// - On start-up the writer checks the open segment, truncates a torn or corrupt tail back to the
//   last good frame (logging what was cut) and then always starts a new segment, so a reader
//   position past a truncation point simply moves on to the next segment.
// - A reader verifies both checksums before trusting a frame. A bad frame in a sealed segment is
//   reported (segment and offset) and skipped: with a good metadata block the body length skips it,
//   otherwise the reader searches forward for the next valid metadata block.
// - Limits: uncompressed frame <= 64 MiB (`SegmentFormat.maxFrameBytes`), records contain no "\n".
import CZlib

/// Compression codec of a frame.
package enum Codec: String, Sendable, CaseIterable, Codable {
    /// One zstd frame per group commit (default).
    case zstd
    /// One gzip member per group commit.
    case gzip

    var code: UInt8 { self == .zstd ? 1 : 2 }

    init?(code: UInt8) {
        switch code {
        case 1: self = .zstd
        case 2: self = .gzip
        default: return nil
        }
    }
}

/// Constants of the segment format (see the top of this file).
package enum SegmentFormat {
    /// Largest uncompressed frame a writer produces or a reader accepts.
    package static let maxFrameBytes = 64 * 1024 * 1024
    /// File name extension of segments.
    package static let fileExtension = "seg"
    static let metadataSize = 44
    static let zstdSkippableMagic: UInt32 = 0x184D_2A5D
    static let zstdPrefixSize = 8 + metadataSize
    static let gzipPrefixSize = 16 + metadataSize
    static let metadataMagic: [UInt8] = Array("DTLF".utf8)
    static let version: UInt8 = 1
    /// The longest prefix of either codec: enough bytes to decode any frame's metadata.
    static let maxPrefixSize = max(zstdPrefixSize, gzipPrefixSize)

    static func prefixSize(_ codec: Codec) -> Int { codec == .zstd ? zstdPrefixSize : gzipPrefixSize }

    /// The file name of segment `id`: 20 zero-padded digits and the extension.
    package static func fileName(segment id: UInt64) -> String {
        let digits = String(id)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + "." + fileExtension
    }

    /// The segment id in a file name made by `fileName(segment:)`, or nil for any other name.
    package static func segmentID(fileName: String) -> UInt64? {
        guard fileName.hasSuffix("." + fileExtension) else { return nil }
        let stem = fileName.dropLast(fileExtension.count + 1)
        guard stem.count == 20, stem.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt64(stem)
    }
}

/// CRC-32 (IEEE) of `bytes`, continuing from `initial` (zlib's `crc32`).
func checksum(_ bytes: UnsafeRawBufferPointer, initial: UInt32 = 0) -> UInt32 {
    guard let base = bytes.baseAddress, bytes.count > 0 else { return initial }
    var crc = UInt(initial)
    var offset = 0
    while offset < bytes.count {  // zlib's length is a uInt: feed at most 1 GiB per call
        let chunk = min(bytes.count - offset, 1 << 30)
        crc = crc32(crc, base.advanced(by: offset).assumingMemoryBound(to: Bytef.self), uInt(chunk))
        offset += chunk
    }
    return UInt32(truncatingIfNeeded: crc)
}

/// The metadata block of one frame.
package struct FrameMetadata: Sendable, Equatable {
    /// Codec of the body.
    package var codec: Codec
    /// Sequence number of the frame's first record.
    package var firstSequence: UInt64
    /// Number of records in the frame.
    package var recordCount: Int
    /// NDJSON bytes in the frame, newlines included.
    package var uncompressedLength: Int
    /// Compressed bytes following the prefix.
    package var bodyLength: Int
    /// When the writer committed the frame, microseconds since the Unix epoch.
    package var committedAt: Int64
    /// CRC-32 of the body.
    package var bodyChecksum: UInt32

    /// Bytes of the whole frame on disk.
    package var frameLength: Int { SegmentFormat.prefixSize(codec) + bodyLength }

    /// Writes the codec prefix (with this metadata) into `out`, which must hold `prefixSize` bytes.
    func writePrefix(into out: UnsafeMutableRawBufferPointer) {
        var at = 0
        func put<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) {
                out.baseAddress!.advanced(by: at).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
            }
            at += MemoryLayout<T>.size
        }
        switch codec {
        case .zstd:
            put(SegmentFormat.zstdSkippableMagic)
            put(UInt32(SegmentFormat.metadataSize))
        case .gzip:
            for byte: UInt8 in [0x1F, 0x8B, 0x08, 0x04, 0, 0, 0, 0, 0, 0xFF] { put(byte) }
            put(UInt16(SegmentFormat.metadataSize + 4))
            put(UInt8(ascii: "D"))
            put(UInt8(ascii: "T"))
            put(UInt16(SegmentFormat.metadataSize))
        }
        let start = at
        for byte in SegmentFormat.metadataMagic { put(byte) }
        put(SegmentFormat.version)
        put(codec.code)
        put(UInt16(0))
        put(firstSequence)
        put(UInt32(recordCount))
        put(UInt32(uncompressedLength))
        put(UInt32(bodyLength))
        put(committedAt)
        put(bodyChecksum)
        let metaChecksum = checksum(UnsafeRawBufferPointer(rebasing: out[start..<at]))
        put(metaChecksum)
    }

    /// Why a prefix could not be decoded.
    enum DecodeFailure: Error, Equatable {
        /// Fewer bytes than a prefix needs.
        case short(needed: Int)
        /// Not a frame prefix, or a metadata checksum mismatch.
        case invalid(String)
    }

    /// Decodes the prefix at the start of `bytes`.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(DecodeFailure) -> FrameMetadata {
        guard bytes.count >= 4 else { throw .short(needed: 4) }
        func u32(_ at: Int) -> UInt32 { UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self)) }
        func u16(_ at: Int) -> UInt16 { UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt16.self)) }
        let codec: Codec
        let start: Int
        if u32(0) == SegmentFormat.zstdSkippableMagic {
            guard bytes.count >= SegmentFormat.zstdPrefixSize else {
                throw .short(needed: SegmentFormat.zstdPrefixSize)
            }
            guard u32(4) == UInt32(SegmentFormat.metadataSize) else { throw .invalid("skippable frame size") }
            codec = .zstd
            start = 8
        } else if bytes[0] == 0x1F, bytes[1] == 0x8B, bytes[2] == 0x08, bytes[3] == 0x04 {
            guard bytes.count >= SegmentFormat.gzipPrefixSize else {
                throw .short(needed: SegmentFormat.gzipPrefixSize)
            }
            guard u16(10) == UInt16(SegmentFormat.metadataSize + 4), bytes[12] == UInt8(ascii: "D"),
                bytes[13] == UInt8(ascii: "T"), u16(14) == UInt16(SegmentFormat.metadataSize)
            else { throw .invalid("gzip extra field") }
            codec = .gzip
            start = 16
        } else {
            throw .invalid("no frame magic")
        }
        for (index, byte) in SegmentFormat.metadataMagic.enumerated() where bytes[start + index] != byte {
            throw .invalid("metadata magic")
        }
        let stored = u32(start + 40)
        guard checksum(UnsafeRawBufferPointer(rebasing: bytes[start..<start + 40])) == stored else {
            throw .invalid("metadata checksum mismatch")
        }
        guard bytes[start + 4] == SegmentFormat.version else { throw .invalid("unknown version") }
        guard Codec(code: bytes[start + 5]) == codec else { throw .invalid("codec mismatch") }
        let metadata = FrameMetadata(
            codec: codec,
            firstSequence: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: start + 8, as: UInt64.self)),
            recordCount: Int(u32(start + 16)), uncompressedLength: Int(u32(start + 20)),
            bodyLength: Int(u32(start + 24)),
            committedAt: Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: start + 28, as: Int64.self)),
            bodyChecksum: u32(start + 36))
        guard metadata.recordCount >= 1, metadata.uncompressedLength <= SegmentFormat.maxFrameBytes,
            metadata.bodyLength > 0
        else { throw .invalid("metadata out of range") }
        return metadata
    }
}
