import Dispatch
import JSONText
import Observability
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A report's JSON as the report API's body: written in pieces of about 1 MiB (compressed, with an
/// `encoding`) by the report worker, after it has handed the answer to the connection
/// (`produce`), while the connection's event loop copies out what is ready (`read`) and frees or
/// recycles each piece once sent. The first bytes leave before the last are written, and a client
/// that keeps up holds a few pieces, not the whole report (a 30-day per-link report at 1,000 links
/// is ~54 MB of JSON). Writing on the event loop itself, as the socket asked, was tried and cost the
/// ingest requests on that loop: with two clients reading the 54 MB per-link report, single events'
/// p99.9 was 68-75 ms against 34-36 ms (docs/ingest.md, "Report API").
///
/// `@unchecked Sendable`: the writer's state (`source`, `compressor`) is used by the one thread
/// that calls `produce` (or the first `read`, when nothing did); everything shared is in `shared`
/// (a second writing thread, for a large report, takes spare buffers from it and nothing else).
package final class ReportJSONPieces: @unchecked Sendable {
    private struct Shared {
        /// Written pieces not yet read, oldest first (`first` is the next one).
        var pieces: [[UInt8]] = []
        var first = 0
        /// Bytes of `pieces[first]` already read.
        var offset = 0
        /// Emptied uncompressed pieces handed back for the writer to reuse (at most `spareLimit`).
        var spare: [[UInt8]] = []
        var isProduced = false
        var isStarted = false
        var isCancelled = false
        /// What `read(into:suspend:wake:)` left to call when a piece is ready.
        var wake: (@Sendable () -> Void)?
        var size = 0
        var jsonSize = 0
    }

    private let shared = Mutex(Shared())
    /// The report's rows as JSON, until written (then dropped, with the rows).
    private var source: ReportJSONStream?
    private let pieceSize: Int
    private let encoding: ReportEncoding?
    /// How many threads write a large report (`ReportJSONChunks`): 2, or 1.
    private let writers: Int
    private static let spareLimit = 2

    /// A body for `report`'s JSON (with a final line feed, as the API sends it), in pieces of whole
    /// rows: at least `pieceSize` bytes when one thread writes it (the last piece may be smaller),
    /// about `pieceSize` when two do. A report of at least four pieces is written by the calling
    /// thread and one more (`ReportJSONChunks`; `writers` 1 keeps every report on the calling
    /// thread); the bytes are the same. With an `encoding`, each piece is compressed as it is written
    /// and only the compressed bytes are kept, in pieces of about a quarter of `pieceSize` (~3 MB in
    /// all instead of 54 for the report above). Nothing is written until `produce` or the first `read`.
    package init(
        _ report: any RenderableReport, pieceSize: Int = 1 << 20, encoding: ReportEncoding? = nil, writers: Int = 2
    ) {
        precondition((1...2).contains(writers), "one or two writers")
        source = ReportJSONStream(report, newline: true)
        self.pieceSize = max(pieceSize, 1)
        self.encoding = encoding
        self.writers = writers
    }

    /// The whole body's length (compressed, with an `encoding`), once written.
    package var size: Int { shared.withLock { $0.size } }
    /// The JSON's length before any compression, once written.
    package var jsonSize: Int { shared.withLock { $0.jsonSize } }

    /// Writes the whole body, handing out each piece as it is done; returns at once when writing
    /// has started already. Stops early once `cancel` was called.
    package func produce() {
        let starts = shared.withLock { shared in
            defer { shared.isStarted = true }
            return !shared.isStarted
        }
        guard starts, let source else { return }
        self.source = nil
        var jsonSize = 0
        if let encoding {
            let compressor = ReportCompressor(encoding)
            let outputSize = max(pieceSize / 4, 1)
            var out: [UInt8] = []
            out.reserveCapacity(outputSize * 2)
            // Each piece's buffer is written again; only the compressed bytes are kept.
            let isWritten = forEachPiece(source) { piece in
                jsonSize += piece.count
                piece.withUnsafeBytes { compressor.compress($0, into: &out) }
                guard out.count >= outputSize else { return true }
                guard publish(out) else { return false }
                out = []
                out.reserveCapacity(outputSize * 2)
                return true
            }
            // Cancelled: nobody reads the rest.
            if isWritten {
                compressor.finish(into: &out)
                _ = publish(out)
            }
        } else {
            _ = forEachPiece(source) { piece in
                jsonSize += piece.count
                return publish(piece.takeBytes())
            }
        }
        finish(jsonSize: jsonSize)
    }

    /// Writes `source` in pieces and hands each to `body` on this thread, in order, until `body`
    /// returns false (then returns false). A report of at least four pieces is written by this thread
    /// and one more (`ReportJSONChunks`, with `writers` 2): pieces of about `pieceSize` bytes, whole
    /// rows; a smaller one (or with `writers` 1) by this thread alone, in pieces of at least
    /// `pieceSize`. The bytes are the same either way. `body` may take a piece's bytes; a buffer it
    /// leaves is written again.
    private func forEachPiece(_ source: ReportJSONStream, _ body: (inout JSONText) -> Bool) -> Bool {
        let pieceSize = self.pieceSize
        let buffer: @Sendable () -> JSONText = { [self] in
            var piece = JSONText(reusing: shared.withLock { $0.spare.popLast() } ?? [])
            piece.reserve(pieceSize + pieceSize / 4)
            return piece
        }
        if writers > 1, ReportJSONChunks.isWorthSplitting(source, size: pieceSize) {
            var isWhole = true
            ReportJSONChunks.forEachChunk(of: source, size: pieceSize, buffer: buffer) { chunk in
                isWhole = body(&chunk)
                return isWhole
            }
            return isWhole
        }
        var source = source
        var piece = buffer()
        while source.write(into: &piece, upTo: pieceSize) {
            guard body(&piece) else { return false }
            if piece.count > 0 { piece.removeAll() } else { piece = buffer() }
        }
        return true
    }

    /// Hands `piece` to the reader (waking it when it waits); false once the body was cancelled.
    private func publish(_ piece: [UInt8]) -> Bool {
        let (wake, isCancelled) = shared.withLock { shared -> ((@Sendable () -> Void)?, Bool) in
            // Nobody will read it: the writer stops here.
            if shared.isCancelled { return (nil, true) }
            shared.pieces.append(piece)
            shared.size += piece.count
            defer { shared.wake = nil }
            return (shared.wake, shared.isCancelled)
        }
        wake?()
        return !isCancelled
    }

    private func finish(jsonSize: Int) {
        let wake = shared.withLock { shared in
            shared.isProduced = true
            shared.jsonSize = jsonSize
            defer { shared.wake = nil }
            return shared.wake
        }
        wake?()
    }

    /// Copies the next bytes into `buffer` (at most its size, which must not be 0); 0 at the end.
    /// Writes the whole body first when nothing has started writing it (the benchmark, the tests).
    package func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        produce()
        // Written whole by this thread, or by another that started first: wait for it to finish.
        while true {
            let count = read(into: buffer, suspend: {}, wake: {})
            if count >= 0 { return count }
            usleep(100)
        }
    }

    /// Copies the next ready bytes into `buffer` and returns how many, 0 at the end; -1, having
    /// called `suspend` and kept `wake` for the next piece, when none is ready yet.
    package func read(
        into buffer: UnsafeMutableRawBufferPointer, suspend: () -> Void, wake: @escaping @Sendable () -> Void
    ) -> Int {
        precondition(buffer.count > 0, "an empty buffer")
        return shared.withLock { shared in
            while shared.first < shared.pieces.count && shared.offset == shared.pieces[shared.first].count {
                // Read: an uncompressed piece goes back to the writer, if it has room; else freed.
                let done = shared.pieces[shared.first]
                shared.pieces[shared.first] = []
                if encoding == nil, !shared.isProduced, shared.spare.count < Self.spareLimit {
                    shared.spare.append(done)
                }
                shared.first += 1
                shared.offset = 0
            }
            if shared.first == shared.pieces.count {
                // Everything ready is read: forget the empty slots.
                shared.pieces.removeAll(keepingCapacity: true)
                shared.first = 0
                guard shared.isProduced else {
                    suspend()
                    shared.wake = wake
                    return -1
                }
                return 0
            }
            let count = min(buffer.count, shared.pieces[shared.first].count - shared.offset)
            let offset = shared.offset
            shared.pieces[shared.first].withUnsafeBytes { bytes in
                buffer.baseAddress!.copyMemory(from: bytes.baseAddress! + offset, byteCount: count)
            }
            shared.offset += count
            return count
        }
    }

    /// The response is over: writing stops at the next piece, and what is held is freed.
    package func cancel() {
        shared.withLock { shared in
            shared.isCancelled = true
            shared.pieces = []
            shared.spare = []
            shared.first = 0
            shared.offset = 0
        }
    }

    deinit {
        // The report's rows and these pieces were freed into the heaps of the threads that made
        // them; glibc keeps freed memory for reuse, so each report worker's heap would stay at its
        // largest report (~100 MB for the per-link report at 1,000 links, and as much for its
        // totals, whose JSON is 2 MB). Given back on a utility queue, off any event loop, at most
        // once a second however many reports end.
        shared.withLock { shared in
            shared.pieces = []
            shared.spare = []
        }
        Heap.returnFreeMemorySoon()
    }
}
