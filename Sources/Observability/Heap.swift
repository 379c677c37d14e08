internal import CMalloc
import Dispatch
import Synchronization

/// The process's malloc heap.
package enum Heap {
    /// Gives freed heap memory back to the system (glibc `malloc_trim(0)`: every arena's free
    /// pages, not only the top of the heap). glibc keeps freed memory for reuse, so a thread that
    /// once built a large result keeps that much resident. Takes ~10 ms after a 50 MB report and
    /// briefly holds each arena's lock: call it off the hot path, after large, rare work.
    package static func returnFreeMemory() {
        _ = malloc_trim(0)
    }

    /// `returnFreeMemory` a second from now on a utility queue, once for all the calls made before
    /// it runs (`HeapTrimmer`): what reports free is given back after them, at most once a second.
    package static func returnFreeMemorySoon() { trimmer.trimSoon() }

    private static let trimmer = HeapTrimmer(delay: .seconds(1)) { returnFreeMemory() }
}

/// Runs `trim` on a utility queue `delay` after a call to `trimSoon`, once for every call made
/// before it runs: work that frees much (a report) calls it each time it ends, and a burst of
/// such work costs one trim a `delay`, not one per call.
package final class HeapTrimmer: Sendable {
    private let delay: Duration
    private let trim: @Sendable () -> Void
    private let isScheduled = Atomic<Bool>(false)

    package init(delay: Duration, trim: @escaping @Sendable () -> Void) {
        self.delay = delay
        self.trim = trim
    }

    package func trimSoon() {
        guard !isScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let (seconds, attoseconds) = delay.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
            // Cleared first: memory freed while the trim runs is given back by the next one.
            isScheduled.store(false, ordering: .releasing)
            trim()
        }
    }
}
