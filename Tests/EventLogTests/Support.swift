import Foundation
import Testing

@testable import EventLog

/// A fresh temporary directory removed when the value is dropped by `withTemporaryDirectory`.
func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let path = NSTemporaryDirectory() + "eventlog-test-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

/// A configuration for tests: small commit delay, given codec.
func testConfiguration(_ directory: String, codec: Codec = .zstd) -> LogConfiguration {
    var configuration = LogConfiguration(directory: directory + "/segments", node: "node-1")
    configuration.codec = codec
    configuration.groupCommitDelay = .microseconds(200)
    configuration.retryAfter = .zero
    return configuration
}

/// A realistic envelope line with a distinguishing id.
func envelope(_ id: Int, receivedAt: String = "2026-06-01T10:20:30.123Z") -> [UInt8] {
    Array(
        #"{"v":1,"id":"evt-\#(id)","app":"app_1","kind":"event","time":"2026-06-01T10:20:30.123Z","received_at":"\#(receivedAt)","clock":"ok","name":"purchase","device":"dev-\#(id % 97)","platform":"ios","data":{"amount":\#(id % 1000),"currency":"EUR"}}"#
            .utf8)
}

/// Every record in the node's log from the start, with the damage reported on the way.
func readAll(_ directory: String, node: String = "node-1") throws -> (records: [String], damaged: [FrameDamage]) {
    let reader = try LogReader(directory: directory, node: node)
    var position: LogPosition?
    var records: [String] = []
    var damaged: [FrameDamage] = []
    for _ in 0..<100_000 {
        let batch = try reader.read(after: position, maxRecords: 10_000, maxBytes: 8 << 20)
        records += batch.records.map { String(decoding: $0, as: UTF8.self) }
        damaged += batch.damaged
        if batch.isEmpty && batch.next == position { break }
        position = batch.next
    }
    return (records, damaged)
}

/// Appends `bytes` to the end of the file at `path` (a torn tail, garbage, zeros, as a crash would leave).
func appendToFile(_ path: String, _ bytes: Data) throws {
    guard let handle = FileHandle(forWritingAtPath: path) else { throw CocoaError(.fileNoSuchFile) }
    defer { try? handle.close() }
    try handle.seekToEnd()
    try handle.write(contentsOf: bytes)
}

/// Paths of the node's segment files, oldest first.
func segmentPaths(_ directory: String, node: String = "node-1") throws -> [String] {
    try LogReader(directory: directory, node: node).segments().map(\.path)
}

/// Runs `body` on `count` real threads at once (Dispatch would cap the width at the core count)
/// and waits at most two minutes for all of them.
func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) throws {
    let finished = DispatchSemaphore(value: 0)
    for index in 0..<count {
        let thread = Thread {
            body(index)
            finished.signal()
        }
        thread.start()
    }
    for _ in 0..<count {
        if finished.wait(timeout: .now() + 120) == .timedOut { throw TimeoutError() }
    }
}

struct TimeoutError: Error {}
