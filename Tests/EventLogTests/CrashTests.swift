import Foundation
import Glibc
import Testing

@testable import EventLog

@Suite struct CrashTests {
    @Test("after SIGKILL during concurrent appends every acknowledged record is readable", arguments: Codec.allCases)
    func killDuringAppends(codec: Codec) throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir, codec: codec)
            configuration.maxSegmentBytes = 256 * 1024
            // Warm up in the parent so the child needs no first-time runtime work.
            let warm = try LogWriter(configuration: configuration)
            try warm.append([Array("{\"warm\":1}".utf8)])
            warm.close()

            // fork() in a multithreaded test process: a child that inherited a lock held by another
            // thread could hang before its first append; such an attempt is killed and repeated.
            var acknowledged: [Int] = []
            var secondWriter: LogError?
            for attempt in 0..<3 where acknowledged.count < 3000 {
                var fds: [Int32] = [0, 0]
                #expect(pipe(&fds) == 0)
                let pid = fork()
                if pid == 0 {
                    close(fds[0])
                    runChild(configuration: configuration, ackFD: fds[1], idBase: attempt * 100_000_000)
                }
                close(fds[1])
                #expect(pid > 0)
                acknowledged += collectAcks(from: fds[0], killing: pid, after: 3000) {
                    // While the child appends, a second process cannot open the same node for writing.
                    do throws(LogError) {
                        try LogWriter(configuration: configuration).close()
                    } catch {
                        secondWriter = error
                    }
                }
                close(fds[0])
            }
            #expect(
                secondWriter == .unavailable(reason: "another process is writing to \(configuration.nodeDirectory)"))
            #expect(acknowledged.count >= 3000)

            // Restart: recovery checks the segment the child was writing, then everything is read.
            let writer = try LogWriter(configuration: configuration)
            writer.close()
            let (records, damaged) = try readAll(configuration.directory)
            #expect(damaged.isEmpty)
            var present: [Int: Int] = [:]
            for record in records where record.hasPrefix("{\"crash\":") {
                present[Int(record.dropFirst(9).dropLast())!, default: 0] += 1
            }
            let missing = acknowledged.filter { present[$0] == nil }
            #expect(missing.isEmpty, "acknowledged but missing: \(missing.prefix(10))")
            #expect(present.values.allSatisfy { $0 == 1 })
        }
    }

    /// The child: 8 threads append in a loop and report every acknowledged id on the pipe.
    private func runChild(configuration: LogConfiguration, ackFD: Int32, idBase: Int) -> Never {
        guard let writer = try? LogWriter(configuration: configuration) else { _exit(3) }
        for thread in 0..<8 {
            Thread {
                for index in 0..<1_000_000 {
                    let first = idBase + (thread * 1_000_000 + index) * 3
                    let ids = (0..<(1 + index % 3)).map { first + $0 }
                    guard (try? writer.append(ids.map { Array("{\"crash\":\($0)}".utf8) })) != nil else { _exit(4) }
                    let line = ids.map { "\($0)\n" }.joined()
                    _ = line.withCString { write(ackFD, $0, strlen($0)) }
                }
            }.start()
        }
        while true { sleep(1) }
    }

    /// Reads acknowledged ids until `count` arrived (or 60 s passed, or 15 s without any), SIGKILLs
    /// the child, reads the rest.
    private func collectAcks(from fd: Int32, killing pid: pid_t, after count: Int, whileRunning: () -> Void) -> [Int] {
        var text: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var killed = false
        var checked = false
        let start = Date()
        while true {
            if !checked, text.count(where: { $0 == 10 }) >= 100 {
                whileRunning()
                checked = true
            }
            let elapsed = Date().timeIntervalSince(start)
            let stuck = text.isEmpty && elapsed > 15
            if !killed, text.count(where: { $0 == 10 }) >= count || elapsed > 60 || stuck {
                kill(pid, SIGKILL)
                var status: Int32 = 0
                waitpid(pid, &status, 0)
                killed = true
            }
            if !killed {
                // Wait at most 100 ms for data so the time limits above are checked.
                var pollFD = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&pollFD, 1, 100) == 0 { continue }
            }
            let got = read(fd, &buffer, buffer.count)
            if got <= 0 {
                if !killed {
                    usleep(10_000)  // the child exited early; the deadline ends the wait
                    continue
                }
                break
            }
            text += buffer[0..<got]
        }
        // A line cut by the kill was never acknowledged in full: drop it.
        if let lastNewline = text.lastIndex(of: 10) { text.removeSubrange((lastNewline + 1)...) } else { text = [] }
        return String(decoding: text, as: UTF8.self).split(separator: "\n").compactMap { Int($0) }
    }
}
