import Foundation
import Testing

@testable import EventLog

/// The names of this process's threads, as `top -H`, `perf` and gdb show them.
private func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { task in
        (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
            .trimmingCharacters(in: .newlines)
    }
}

@Suite struct ThreadNameTests {
    @Test("a log writer's threads carry their names where operators look for them (top -H, perf, /proc)")
    func writerThreads() throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.compressionThreads = 1
            configuration.syncsInFlight = 2
            let writer = try LogWriter(configuration: configuration)
            defer { writer.close() }
            try writer.append([envelope(1)])
            // Each thread names itself when it first runs, which under a busy test run can be a
            // while after the writer started (a compressor with nothing to do may not have run yet).
            let expected = ["eventlog-writer", "eventlog-zip0", "eventlog-sync0", "eventlog-sync1", "eventlog-alloc"]
            var names = threadNames()
            var waits = 0
            while !expected.allSatisfy(names.contains), waits < 1000 {  // at most ~10 s
                usleep(10_000)
                names = threadNames()
                waits += 1
            }
            // Before 2026-12-03 every one of them showed as the test process's own name.
            for name in expected {
                #expect(names.contains(name), "\(name) not among \(names.sorted())")
            }
        }
    }

    @Test("a name longer than Linux keeps (15 bytes) is cut rather than lost")
    func longName() {
        #expect(namesWhileRunning("a-thread-name-of-26-bytes").contains("a-thread-name-o"))
    }

    @Test("a long name is cut between characters, never inside one (which would make it longer)")
    func cutBetweenCharacters() {
        // 8 + 2 x 5 = 18 bytes: its first 15 end inside the fourth é, and that half, repaired, would
        // make a name of 17 bytes, which Linux refuses.
        let names = namesWhileRunning("report-a\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}")
        #expect(names.contains("report-a\u{e9}\u{e9}\u{e9}"))
    }

    /// The process's thread names while a thread started as `name` runs.
    private func namesWhileRunning(_ name: String) -> [String] {
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        Thread.startNamed(name) {
            started.signal()
            release.wait()
        }
        started.wait()
        defer { release.signal() }
        return threadNames()
    }
}
