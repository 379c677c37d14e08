import Locking

// The envelope lines of one request, written one after another into one buffer: one allocation
// per request instead of one array per event, and the event log copies them from it as they are.

/// A growable NDJSON buffer written through `JSONWriter` with a per-line length bound.
///
/// `@unchecked Sendable`: it is written by one thread (the normaliser of one request, or whoever
/// builds it) and only read after it has been handed to another thread through a lock (ingest's
/// commit queue); nothing appends to it once it has been handed over.
///
/// `@exclusivity(unchecked)` on the stored properties: Swift checks every access to a class's
/// stored `var` at run time for an overlapping access (~80 instructions each, six per single-event
/// request here), and the one writer above never overlaps its own accesses.
package final class LineBuffer: @unchecked Sendable {
    @exclusivity(unchecked) private var base: UnsafeMutablePointer<UInt8>
    @exclusivity(unchecked) private var capacity: Int
    /// Bytes written, newlines included.
    @exclusivity(unchecked) package private(set) var count = 0
    /// Lines written.
    @exclusivity(unchecked) package private(set) var lines = 0

    /// Creates a buffer holding `capacity` bytes before it first grows.
    package init(capacity: Int) {
        if capacity <= Self.pooledBytes {
            self.capacity = Self.pooledBytes
            base = Self.pool.withLock { $0.popLast()?.pointer } ?? .allocate(capacity: Self.pooledBytes)
        } else {
            self.capacity = capacity
            base = .allocate(capacity: capacity)
        }
    }

    deinit { Self.release(base, capacity: capacity) }

    /// The size of the buffers kept for reuse: a single event's line (its bound is 1-3 KiB).
    static let pooledBytes = 4096
    /// Most buffers kept for reuse (256 KiB).
    static let pooledLimit = 64
    /// Buffers of `pooledBytes` freed by earlier requests. Every single-event request needs one
    /// buffer of more than 1 KiB, and glibc serves each such request by first consolidating its
    /// fast bins (`malloc_consolidate`, with every small chunk the request freed); a buffer from
    /// here costs a lock instead.
    private static let pool = Locked<[Block]>([])

    /// A pooled buffer. `@unchecked Sendable`: a buffer in the pool belongs to no line buffer;
    /// taking it out under the lock hands it to exactly one.
    private struct Block: @unchecked Sendable {
        let pointer: UnsafeMutablePointer<UInt8>
    }

    private static func release(_ buffer: UnsafeMutablePointer<UInt8>, capacity: Int) {
        let block = Block(pointer: buffer)
        if capacity == pooledBytes,
            pool.withLock({ (free) -> Bool in
                guard free.count < pooledLimit else { return false }
                free.append(block)
                return true
            })
        {
            return
        }
        buffer.deallocate()
    }

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
        Self.release(base, capacity: capacity)
        base = grown
        capacity = newCapacity
    }
}
