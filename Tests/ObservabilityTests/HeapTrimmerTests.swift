import Dispatch
import Observability
import Synchronization
import Testing

/// `Heap.returnFreeMemorySoon`'s scheduling: the calls made before a trim runs share it, and a call
/// after it runs schedules the next.
@Suite struct HeapTrimmerTests {
    @Test("calls before the trim runs make one trim; a call after it makes another")
    func coalesces() {
        let trims = Atomic<Int>(0)
        let ran = DispatchSemaphore(value: 0)
        let trimmer = HeapTrimmer(delay: .milliseconds(100)) {
            trims.add(1, ordering: .relaxed)
            ran.signal()
        }
        for _ in 0..<100 { trimmer.trimSoon() }
        #expect(ran.wait(timeout: .now() + 10) == .success, "no trim ran")
        // Bounded: a second trim, had the calls scheduled more than one, would run within the delay.
        #expect(ran.wait(timeout: .now() + 0.5) == .timedOut, "the calls before the trim made more than one")
        #expect(trims.load(ordering: .relaxed) == 1)
        trimmer.trimSoon()
        #expect(ran.wait(timeout: .now() + 10) == .success, "a call after the trim ran scheduled none")
        #expect(trims.load(ordering: .relaxed) == 2)
    }
}
