import Foundation
import Testing

@testable import EventLog

@Suite struct RoundTripTests {
    @Test("records come back in order through either codec", arguments: Codec.allCases)
    func roundTrip(codec: Codec) throws {
        try withTemporaryDirectory { dir in
            let configuration = testConfiguration(dir, codec: codec)
            let writer = try LogWriter(configuration: configuration)
            for batch in 0..<20 { try writer.append((0..<50).map { envelope(batch * 50 + $0) }) }
            try writer.append([Array("{}".utf8)])
            writer.close()
            let (records, damaged) = try readAll(configuration.directory)
            #expect(damaged.isEmpty)
            #expect(records.count == 1001)
            #expect(records.first == String(decoding: envelope(0), as: UTF8.self))
            #expect(records[999] == String(decoding: envelope(999), as: UTF8.self))
            #expect(records.last == "{}")
        }
    }

    @Test("reading resumes exactly at the returned position, whole frames only")
    func resumeAtPosition() throws {
        try withTemporaryDirectory { dir in
            let configuration = testConfiguration(dir)
            let writer = try LogWriter(configuration: configuration)
            for batch in 0..<10 { try writer.append((0..<10).map { envelope(batch * 10 + $0) }) }
            writer.close()
            let reader = try LogReader(directory: configuration.directory, node: "node-1")
            let first = try reader.read(after: nil, maxRecords: 15, maxBytes: 1 << 20)
            #expect(first.count % 10 == 0 && first.count >= 10 && first.count <= 15)
            let rest = try reader.read(after: first.next, maxRecords: 1000, maxBytes: 1 << 20)
            #expect(first.count + rest.count == 100)
            #expect(rest.firstSequence == UInt64(first.count))
            let end = try reader.read(after: rest.next, maxRecords: 1000, maxBytes: 1 << 20)
            #expect(end.isEmpty && end.next == rest.next)
        }
    }

    @Test("a record containing a newline is refused, an empty append is a no-op")
    func invalidRecords() throws {
        try withTemporaryDirectory { dir in
            let writer = try LogWriter(configuration: testConfiguration(dir))
            defer { writer.close() }
            #expect(throws: LogError.invalidRecord(reason: "record contains a newline")) {
                try writer.append([Array("{\"a\":1}\n{}".utf8)])
            }
            try writer.append([])
            #expect(writer.framesCommitted == 0)
        }
    }

    @Test("append(ndjson:) refuses a buffer without a final newline; both append forms interleave in order")
    func ndjsonValidation() throws {
        try withTemporaryDirectory { dir in
            let configuration = testConfiguration(dir)
            let writer = try LogWriter(configuration: configuration)
            #expect(throws: LogError.invalidRecord(reason: "NDJSON must end with a newline")) {
                try writer.append(ndjson: Array("{\"a\":1}\n{}".utf8))
            }
            try writer.append(ndjson: [])
            #expect(writer.framesCommitted == 0)
            try writer.append(ndjson: Array("{\"a\":1}\n{\"b\":2}\n".utf8))
            try writer.append([Array("{\"c\":3}".utf8)])
            writer.close()
            #expect(try readAll(configuration.directory).records == ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"])
        }
    }

    @Test("stock zstdcat and zcat print the records of a segment", arguments: Codec.allCases)
    func stockTools(codec: Codec) throws {
        let tool = codec == .zstd ? "/usr/bin/zstdcat" : "/bin/zcat"
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            try Test.cancel("skipped: \(tool) is not installed (apt-get install zstd gzip)")
        }
        try withTemporaryDirectory { dir in
            let configuration = testConfiguration(dir, codec: codec)
            let writer = try LogWriter(configuration: configuration)
            for batch in 0..<5 { try writer.append((0..<20).map { envelope(batch * 20 + $0) }) }
            writer.close()
            let (status, output) = try runTool(tool, arguments: try segmentPaths(configuration.directory))
            #expect(status == 0)
            let expected = (0..<100).map { String(decoding: envelope($0), as: UTF8.self) + "\n" }.joined()
            #expect(String(decoding: output, as: UTF8.self) == expected)
        }
    }

    @Test(
        "large zstd frames at a fast, the default and a slower level read back, also with zstdcat",
        arguments: [-2, 1, 3])
    func largeFramesAtLevels(level: Int) throws {
        try withTemporaryDirectory { dir in
            var configuration = testConfiguration(dir)
            configuration.compressionLevel = level
            let writer = try LogWriter(configuration: configuration)
            // Frames over 256 KiB: level 1's tuned hash table (hashLog 13) applies to inputs this large.
            let records = (0..<6000).map { envelope($0) }
            for batch in 0..<2 { try writer.append(Array(records[(batch * 3000)..<((batch + 1) * 3000)])) }
            writer.close()
            let (read, damaged) = try readAll(configuration.directory)
            #expect(damaged.isEmpty)
            #expect(read == records.map { String(decoding: $0, as: UTF8.self) })
            let tool = "/usr/bin/zstdcat"
            guard FileManager.default.isExecutableFile(atPath: tool) else {
                try Test.cancel("skipped: \(tool) is not installed (apt-get install zstd)")
            }
            let (status, output) = try runTool(tool, arguments: try segmentPaths(configuration.directory))
            #expect(status == 0)
            #expect(String(decoding: output, as: UTF8.self) == read.map { $0 + "\n" }.joined())
        }
    }
}

/// Runs a stock tool (`zstdcat`, `zcat`) on `arguments` and returns its exit status and standard output.
func runTool(_ tool: String, arguments: [String]) throws -> (status: Int32, output: Data) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, output)
}
