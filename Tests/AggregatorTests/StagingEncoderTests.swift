import EventModel
import Testing

@testable import Aggregator

@Suite struct StagingEncoderTests {
    @Test("COPY text escaping keeps tabs, newlines and backslashes inside one field")
    func escaping() {
        var envelope = event("id\twith\\tab", name: "line\nbreak\r", data: #"{"a":"x\\y"}"#)
        envelope.sdk = nil
        var row: [UInt8] = []
        StagingEncoder.appendEvent(envelope, to: &row)
        let text = String(decoding: row, as: UTF8.self)
        #expect(text.hasSuffix("\n"))
        #expect(text.filter { $0 == "\n" }.count == 1)
        let fields = text.dropLast().split(separator: "\t", omittingEmptySubsequences: false)
        let columns = StagingEncoder.eventColumns
        #expect(fields.count == columns.count)
        #expect(fields[columns.firstIndex(of: "event_id")!] == #"id\twith\\tab"#)
        #expect(fields[columns.firstIndex(of: "name")!] == #"line\nbreak\r"#)
        #expect(fields[columns.firstIndex(of: "data")!] == #"{"a":"x\\\\y"}"#)
        #expect(fields[columns.firstIndex(of: "sdk")!] == #"\N"#)
    }

    @Test("COPY binary rows: every column, NULLs, timestamps from PostgreSQL's epoch, NUL as U+FFFD, jsonb version 1")
    func binaryRow() {
        var envelope = event("id\t1", name: "a\u{0}b", time: "2000-01-01T00:00:01.000Z", data: #"{"a":"\u0000"}"#)
        envelope.sdk = nil
        var row: [UInt8] = []
        StagingEncoder.appendEventBinary(envelope, to: &row)
        // Field count, then (length, bytes) per field; -1 is NULL.
        var fields: [[UInt8]?] = []
        var index = 2
        #expect(Int(row[0]) << 8 | Int(row[1]) == StagingEncoder.eventColumns.count)
        while index < row.count {
            let length = Int32(bitPattern: row[index..<index + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            index += 4
            if length < 0 {
                fields.append(nil)
            } else {
                fields.append(Array(row[index..<index + Int(length)]))
                index += Int(length)
            }
        }
        let columns = StagingEncoder.eventColumns
        #expect(fields.count == columns.count)
        #expect(fields[columns.firstIndex(of: "event_id")!] == Array("id\t1".utf8))
        #expect(fields[columns.firstIndex(of: "name")!] == [0x61, 0xEF, 0xBF, 0xBD, 0x62])
        #expect(fields[columns.firstIndex(of: "sdk")!] == nil)
        #expect(fields[columns.firstIndex(of: "event_time")!] == [0, 0, 0, 0, 0, 0x0F, 0x42, 0x40])  // 1,000,000 µs
        #expect(fields[columns.firstIndex(of: "data")!] == [1] + Array(#"{"a":"\ufffd"}"#.utf8))
        #expect(fields[columns.firstIndex(of: "clock")!] == Array("ok".utf8))
    }

    @Test("a JSON \\u0000 escape, which jsonb refuses, becomes U+FFFD; an escaped backslash before u0000 does not")
    func nullEscape() {
        #expect(repairingEscapes(Array(#"{"a":"\\u0000"}"#.utf8), .nul) == nil)
        #expect(repairingEscapes(Array(#"{"a":"\ud83d"}"#.utf8), .nul) == nil)  // only what was asked for
        #expect(
            repairingEscapes(Array(#"{"a":"x\u0000y","b":"\u0000"}"#.utf8), .nul).map {
                String(decoding: $0, as: UTF8.self)
            }
                == #"{"a":"x\ufffdy","b":"\ufffd"}"#)
    }

    @Test("derived rows in COPY binary: field count, dates as days since 2000-01-01, timestamps, NULLs")
    func derivedRowBinary() {
        var out: [UInt8] = []
        StagingEncoder.appendRowBinary(
            [.text("a"), .date(10_958), .timestamp(Timestamp(microseconds: 946_684_800_000_001)), .text(nil)], to: &out)
        #expect(
            out == [0, 4] + [0, 0, 0, 1, UInt8(ascii: "a")] + [0, 0, 0, 4, 0, 0, 0, 1] + [
                0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1,
            ]
                + [0xFF, 0xFF, 0xFF, 0xFF])
    }
}
