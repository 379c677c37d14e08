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
            let names = threadNames()
            // Before 2026-12-03 every one of them showed as the test process's own name.
            for name in ["eventlog-writer", "eventlog-zip0", "eventlog-sync0", "eventlog-sync1", "eventlog-alloc"] {
                #expect(names.contains(name), "\(name) not among \(names.sorted())")
            }
        }
    }

    @Test("a name longer than Linux keeps (15 bytes) is cut rather than lost")
    func longName() {
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        Thread.startNamed("a-thread-name-of-26-bytes") {
            started.signal()
            release.wait()
        }
        started.wait()
        defer { release.signal() }
        #expect(threadNames().contains("a-thread-name-o"))
    }
}
