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

    @Test("a JSON \\u0000 escape, which jsonb refuses, becomes U+FFFD; an escaped backslash before u0000 does not")
    func nullEscape() {
        #expect(StagingEncoder.containsNullEscape(Array(#"{"a":"\u0000"}"#.utf8)))
        #expect(!StagingEncoder.containsNullEscape(Array(#"{"a":"\\u0000"}"#.utf8)))
        #expect(
            String(decoding: StagingEncoder.replacingNullEscapes(Array(#"{"a":"x\u0000y"}"#.utf8)), as: UTF8.self)
                == #"{"a":"x\ufffdy"}"#)
    }
}
