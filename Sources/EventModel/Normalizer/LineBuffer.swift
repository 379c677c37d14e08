// The envelope lines of one request, written one after another into one buffer: one allocation
// per request instead of one array per event, and the event log takes the buffer as it is.

/// A growable NDJSON buffer written through `JSONWriter` with a per-line length bound.
///
/// Not `Sendable`: one normaliser owns it while it works on one request; `bytes` hands the
/// content out as an array.
final class LineBuffer {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written, newlines included.
    private(set) var count = 0
    /// Lines written.
    private(set) var lines = 0

    /// Creates a buffer holding `capacity` bytes before it first grows.
    init(capacity: Int) {
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
    func appendLine(_ line: [UInt8]) {
        line.withUnsafeBufferPointer { source in
            appendLine(bound: source.count) { $0.raw(bytes: source) }
        }
    }

    /// The lines written so far, each followed by a newline.
    var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    private func grow(to newCapacity: Int) {
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        grown.update(from: base, count: count)
        base.deallocate()
        base = grown
        capacity = newCapacity
    }
}
