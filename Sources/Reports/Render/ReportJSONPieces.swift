import Dispatch
import JSONText
import Observability

/// A report's JSON written at once, in pieces of about 1 MiB, and handed out a piece at a time, each
/// piece freed once read: the report API's body (the report worker writes it, the connection's event
/// loop only copies it out). The report's rows are not kept. Writing it on the event loop as the
/// socket asked for it (the first byte at once) cost the ingest requests on that loop: with two
/// clients reading the 54 MB per-link report, single events' p99.9 was 68-75 ms against 34-36 ms
/// (docs/ingest.md, "Report API").
///
/// `@unchecked Sendable`: made on one thread, then read by one other (the server hands it over
/// through the connection's resume), one call at a time.
package final class ReportJSONPieces: @unchecked Sendable {
    private var pieces: [[UInt8]] = []
    private var piece = 0
    private var offset = 0
    /// The whole body's length (compressed, with an `encoding`).
    package let size: Int
    /// The JSON's length before any compression.
    package let jsonSize: Int

    /// Writes `report`'s JSON (with a final line feed, as the API sends it) in pieces of at least
    /// `pieceSize` bytes (whole rows; the last piece may be smaller). With an `encoding`, each piece
    /// is compressed as it is written (into the one buffer the stream reuses) and only the
    /// compressed bytes are kept, in pieces of about a quarter of `pieceSize`: ~3 MB instead of 54 for
    /// a 30-day per-link report at 1,000 links.
    package init(_ report: any RenderableReport, pieceSize: Int = 1 << 20, encoding: ReportEncoding? = nil) {
        var json = ReportJSONStream(report, newline: true)
        var pieces: [[UInt8]] = []
        var jsonSize = 0
        if let encoding {
            let compressor = ReportCompressor(encoding)
            let outputSize = max(pieceSize / 4, 1)
            var out: [UInt8] = []
            out.reserveCapacity(outputSize * 2)
            json.forEachPiece(of: pieceSize) { piece in
                jsonSize += piece.count
                piece.bytes.withUnsafeBytes { compressor.compress($0, into: &out) }
                if out.count >= outputSize {
                    pieces.append(out)
                    out = []
                    out.reserveCapacity(outputSize * 2)
                }
            }
            compressor.finish(into: &out)
            pieces.append(out)
        } else {
            json.forEachPiece(of: pieceSize) { pieces.append($0.bytes) }
            jsonSize = pieces.reduce(0) { $0 + $1.count }
        }
        self.pieces = pieces
        self.jsonSize = jsonSize
        size = pieces.reduce(0) { $0 + $1.count }
    }

    /// Copies the next bytes into `buffer` (at most its size, which must not be 0); 0 at the end.
    package func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        precondition(buffer.count > 0, "an empty buffer")
        while piece < pieces.count && offset == pieces[piece].count {
            pieces[piece] = []  // read: freed
            piece += 1
            offset = 0
        }
        guard piece < pieces.count else { return 0 }
        let count = min(buffer.count, pieces[piece].count - offset)
        pieces[piece].withUnsafeBytes { bytes in
            buffer.baseAddress!.copyMemory(from: bytes.baseAddress! + offset, byteCount: count)
        }
        offset += count
        return count
    }

    deinit {
        // The report's rows and these pieces were freed into the heap of the worker that made them;
        // glibc keeps freed memory for reuse, so each report worker's heap would stay at its largest
        // report (~100 MB for this one). Given back on a utility queue, off any event loop.
        pieces = []
        if jsonSize >= Self.largeReportBytes { DispatchQueue.global(qos: .utility).async { Heap.returnFreeMemory() } }
    }

    /// A report this large gives freed memory back when its pieces go.
    static let largeReportBytes = 16 << 20
}
