import Observability
import Testing

/// Log lines are one record each and carry no terminal control sequences, whatever a value holds
/// (values can come from clients through PostgreSQL's messages, file names or decoding errors).
@Suite struct LoggerTests {
    @Test(
        "a value's line breaks and control characters are escaped, so it can neither forge a record nor drive a terminal",
        arguments: [
            "forged\r\n2026-12-01T00:00:00.000Z critical ingest: forged", "carriage\rreturn", "nul\u{0}byte",
            "escape \u{1B}[2J\u{1B}[31mred", "tab\there", "next\u{85}line", "separator\u{2028}line", "del\u{7F}",
        ])
    func controlCharactersEscaped(value: String) {
        let lines = Logger.capture { lines in
            Logger(label: "test").warning("logger.escape_test", ["value": value])
            return lines()
        }
        let line = lines.first { $0.contains("logger.escape_test") } ?? ""
        #expect(!line.isEmpty)
        let unsafe = line.unicodeScalars.filter {
            $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{2028}" || $0 == "\u{2029}"
        }
        #expect(unsafe.isEmpty, "control characters left in \(line.debugDescription)")
        #expect(line.contains("value=\""), "a value with control characters is quoted")
    }

    @Test("plain values stay as they are, and quotes and backslashes are escaped")
    func plainValues() {
        let lines = Logger.capture { lines in
            Logger(label: "test").warning("logger.plain_test", ["a": "plain", "b": #"say "hi" \ bye"#])
            return lines()
        }
        let line = lines.first { $0.contains("logger.plain_test") } ?? ""
        #expect(line.hasSuffix(#"a=plain b="say \"hi\" \\ bye""#), "\(line)")
    }
}
