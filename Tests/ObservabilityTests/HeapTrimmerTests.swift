import Dispatch
import Observability
import Synchronization
import Testing

/// `Heap.returnFreeMemorySoon`'s scheduling: the calls made before a trim runs share it, and a call
/// after it runs schedules the next.
@Suite struct HeapTrimmerTests {
    @Test("calls before the trim runs make one trim; a call after it makes another")
    func coalesces() {
        // The calls must all come before the trim can run: a loop this thread took longer than the
        // delay to make (preempted on a loaded machine) proves nothing, so it is made again (bounded).
        let delay = Duration.milliseconds(200)
        for _ in 0..<5 {
            let trims = Atomic<Int>(0)
            let ran = DispatchSemaphore(value: 0)
            let trimmer = HeapTrimmer(delay: delay) {
                trims.add(1, ordering: .relaxed)
                ran.signal()
            }
            let start = ContinuousClock.now
            for _ in 0..<100 { trimmer.trimSoon() }
            let calling = ContinuousClock.now - start
            #expect(ran.wait(timeout: .now() + 30) == .success, "no trim ran")
            guard calling < delay else { continue }
            // Bounded: a second trim, had the calls scheduled more than one, would run within the delay.
            #expect(ran.wait(timeout: .now() + 1) == .timedOut, "the calls before the trim made more than one")
            #expect(trims.load(ordering: .relaxed) == 1)
            trimmer.trimSoon()
            #expect(ran.wait(timeout: .now() + 30) == .success, "a call after the trim ran scheduled none")
            #expect(trims.load(ordering: .relaxed) == 2)
            return
        }
        Issue.record("five rounds of 100 calls each took longer than the delay")
    }
}
