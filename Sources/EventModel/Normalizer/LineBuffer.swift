// The envelope lines of one request, written one after another into one buffer: one allocation
// per request instead of one array per event, and the event log copies them from it as they are.

/// A growable NDJSON buffer written through `JSONWriter` with a per-line length bound.
///
/// `@unchecked Sendable`: it is written by one thread (the normaliser of one request, or whoever
/// builds it) and only read after it has been handed to another thread through a lock (ingest's
/// commit queue); nothing appends to it once it has been handed over.
package final class LineBuffer: @unchecked Sendable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written, newlines included.
    package private(set) var count = 0
    /// Lines written.
    package private(set) var lines = 0

    /// Creates a buffer holding `capacity` bytes before it first grows.
    package init(capacity: Int) {
        self.capacity = max(capacity, 256)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// Writes one line of at most `bound` bytes with `body`, then a newline.
    func appendLine(bound: Int, _ body: (inout JSONWriter) -> Void) {
        if count + bound + 1 > capacity { grow(to: max(count + bound + 1, capacity * 2)) }
        let start = base + count
        var writer = JSONWriter(start)
        body(&writer)
        let written = writer.cursor - start
        precondition(written <= bound, "envelope line bound exceeded")
        start[written] = UInt8(ascii: "\n")
        count += written + 1
        lines += 1
    }

    /// Appends a finished line (no newline in it) and a newline.
    package func appendLine(_ line: [UInt8]) {
        line.withUnsafeBufferPointer { source in
            appendLine(bound: source.count) { $0.raw(bytes: source) }
        }
    }

    /// The lines written so far, each followed by a newline (a copy).
    package var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// Calls `body` with the lines written so far, each followed by a newline (no copy).
    package func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    private func grow(to newCapacity: Int) {
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        grown.update(from: base, count: count)
        base.deallocate()
        base = grown
        capacity = newCapacity
    }
}
