internal import CMalloc

/// The process's malloc heap.
package enum Heap {
    /// Gives freed heap memory back to the system (glibc `malloc_trim(0)`: every arena's free
    /// pages, not only the top of the heap). glibc keeps freed memory for reuse, so a thread that
    /// once built a large result keeps that much resident. Takes ~10 ms after a 50 MB report and
    /// briefly holds each arena's lock: call it off the hot path, after large, rare work.
    package static func returnFreeMemory() {
        _ = malloc_trim(0)
    }
}
