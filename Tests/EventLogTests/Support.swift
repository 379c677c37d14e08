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

/// Writes `frames` frames (one append each) and returns the segment path and each frame's offset.
func writeFrames(_ configuration: LogConfiguration, frames: Int, perFrame: Int = 3) throws -> (String, [Int64]) {
    let writer = try LogWriter(configuration: configuration)
    for frame in 0..<frames { try writer.append((0..<perFrame).map { envelope(frame * perFrame + $0) }) }
    writer.close()
    let path = try #require(try segmentPaths(configuration.directory, node: configuration.node).last)
    let report = try SegmentInspector.inspect(path: path)
    #expect(report.frames.count == frames)
    return (path, report.frames.map(\.offset))
}

/// The end of one round of a cut-at-every-byte test: appends `{"after":cut}` through `writer`
/// (opened on the cut segment, so its recovery has run), closes it, expects the log to read back
/// undamaged as `expected` and then that marker, and removes every segment but `path`, so the next
/// round starts from the original single segment.
func expectResumes(
    after cut: Int, writer: LogWriter, configuration: LogConfiguration, expected: [String], keeping path: String,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let marker = "{\"after\":\(cut)}"
    try writer.append([Array(marker.utf8)])
    writer.close()
    let (records, damaged) = try readAll(configuration.directory)
    #expect(damaged.isEmpty, "cut at \(cut)", sourceLocation: sourceLocation)
    #expect(records == expected + [marker], "cut at \(cut)", sourceLocation: sourceLocation)
    for extra in try segmentPaths(configuration.directory) where extra != path {
        try FileManager.default.removeItem(atPath: extra)
    }
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

/// The descriptors of this process open on `path` (`/proc/self/fd`).
func descriptors(on path: String) -> [Int32] {
    let target = (path as NSString).resolvingSymlinksInPath
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.compactMap { entry in
        guard let fd = Int32(entry),
            let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry),
            link == target
        else { return nil }
        return fd
    }
}
