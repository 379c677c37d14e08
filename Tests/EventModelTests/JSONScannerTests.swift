import Testing

@testable import EventModel

@Suite struct JSONScannerTests {
    static let valid: [String] = [
        "{}", "[]", "0", "-0", "1.5", "-1.5e10", "1E+2", "1e-2", "true", "false", "null", #""""#,
        #"  {"a" : [1, 2, {"b": null}] }  "#, "\t\r\n[ ]\n", #""\u00e9\n\t\"\\\/\b\f\r""#,
        #""\ud83d\ude00""#, "\"héllo 😀 ✓\"", #"{"a":1,"a":2}"#, "123456789012345678901234567890",
        "1e400", #"[[[[[[[[[[]]]]]]]]]]"#, #"{"":""}"#, "\"\u{7F}\"", #""\u0000""#, "-0.0e-0", "[1e5,2E-5,3e+5]",
        #"{"a":{"b":{"c":[]}}}"#, "\"\u{2028}\u{FEFF}\"", #""\uDBFF\uDFFF""#, "[\"a\",\"\"]",
    ]

    static let invalid: [(String, JSONError.Reason, Int)] = [
        ("", .unexpectedEnd, 0),
        ("   ", .unexpectedEnd, 3),
        ("{", .unexpectedEnd, 1),
        ("[1,]", .unexpectedByte, 3),
        (#"{"a":1,}"#, .unexpectedByte, 7),
        (#"{"a" 1}"#, .unexpectedByte, 5),
        ("{1:2}", .unexpectedByte, 1),
        ("01", .invalidNumber, 1),
        ("-01", .invalidNumber, 2),
        ("1.", .unexpectedEnd, 2),
        ("1.e5", .invalidNumber, 2),
        ("1e", .unexpectedEnd, 2),
        ("-", .unexpectedEnd, 1),
        ("-a", .invalidNumber, 1),
        (".5", .unexpectedByte, 0),
        ("+1", .unexpectedByte, 0),
        ("tru", .unexpectedEnd, 3),
        ("nul1", .unexpectedByte, 3),
        ("[1] x", .trailingGarbage, 4),
        ("{} {}", .trailingGarbage, 3),
        ("\"a\tb\"", .controlCharacter, 2),
        ("\"a\u{1}b\"", .controlCharacter, 2),
        (#""\x""#, .invalidEscape, 1),
        (#""\u12""#, .invalidEscape, 5),
        (#""\ud800\u004G""#, .invalidEscape, 12),
        (#""\ud800\x""#, .invalidEscape, 7),
        (#""\ud800"#, .unexpectedEnd, 7),
        (#"["\ud800",01]"#, .invalidNumber, 11),  // a real error after a lone surrogate keeps its offset
        ("[1 2]", .unexpectedByte, 3),
        ("'a'", .unexpectedByte, 0),
        ("NaN", .unexpectedByte, 0),
        ("[Infinity]", .unexpectedByte, 1),
        ("[True]", .unexpectedByte, 1),
        ("[0x10]", .unexpectedByte, 2),
        ("[1e+]", .invalidNumber, 4),
        ("[1.e1]", .invalidNumber, 3),
        ("[01.5]", .invalidNumber, 2),
        ("[-.5]", .invalidNumber, 2),
        ("[,1]", .unexpectedByte, 1),
        ("{,}", .unexpectedByte, 1),
        (#"{"a":1 "b":2}"#, .unexpectedByte, 7),
        (#"["\u00"]"#, .invalidEscape, 6),
        (#"["\"]"#, .unexpectedEnd, 5),
        ("\u{FEFF}{}", .unexpectedByte, 0),
        ("{}\u{0}", .trailingGarbage, 2),
    ]

    /// Lone surrogate escapes (grammatical JSON, not Unicode) and what each string decodes to.
    static let loneSurrogates: [(String, String)] = [
        (#""\ud800""#, "\u{FFFD}"),
        (#""\udc00""#, "\u{FFFD}"),
        (#""\ud800\u0041""#, "\u{FFFD}A"),
        (#""caf\u00e9 \ud83d""#, "café \u{FFFD}"),
        (#""\ud83d\ud83d\ude00x""#, "\u{FFFD}😀x"),
        (#""\ude00\ud83d""#, "\u{FFFD}\u{FFFD}"),
        (#""\ud83d\n""#, "\u{FFFD}\n"),
    ]

    @Test("a lone surrogate escape is accepted, flagged, and decodes as U+FFFD", arguments: loneSurrogates)
    func loneSurrogate(_ text: String, _ decoded: String) throws {
        let document = try JSONDocument(parsing: Array(text.utf8))
        #expect(document.hasLoneSurrogates)
        #expect(document.root.string == decoded)
        #expect(document.root.stringBytes == Array(decoded.utf8))
        // The raw text with `\ufffd` for each lone one is a Unicode string with the same value.
        let replaced = try #require(repairingEscapes(Array(text.utf8), .loneSurrogates))
        #expect(replaced.count == text.utf8.count)
        let clean = try JSONDocument(parsing: replaced)
        #expect(!clean.hasLoneSurrogates && clean.root.string == decoded)
    }

    @Test("pairs, escaped backslashes and other escapes are not lone surrogates, and are left as they are")
    func notLoneSurrogates() throws {
        for text in [
            #""\ud83d\ude00""#, #""\\ud800""#, #""\\\ud83d\ude00\u00e9""#, #"{"a":"\/\"\\"}"#, "\"😀\"", #""\u0000""#,
        ] {
            let document = try JSONDocument(parsing: Array(text.utf8))
            #expect(!document.hasLoneSurrogates, "\(text)")
            #expect(repairingEscapes(Array(text.utf8), .loneSurrogates) == nil, "\(text)")
        }
        let nested = #"{"t":"a\ud83d","ok":"\ud83d\ude00","k\udfff":["\\ud800","\udbff"]}"#
        #expect(
            repairingEscapes(Array(nested.utf8), .loneSurrogates).map { String(decoding: $0, as: UTF8.self) }
                == #"{"t":"a\ufffd","ok":"\ud83d\ude00","k\ufffd":["\\ud800","\ufffd"]}"#)
    }

    @Test("valid documents are accepted", arguments: valid)
    func acceptsValid(_ text: String) throws {
        _ = try JSONDocument(parsing: Array(text.utf8))
    }

    @Test("invalid documents are refused with the offset of the first error", arguments: invalid)
    func refusesInvalid(_ text: String, _ reason: JSONError.Reason, _ offset: Int) {
        #expect(throws: JSONError(reason, at: offset)) { try JSONDocument(parsing: Array(text.utf8)) }
    }

    static let invalidUTF8: [[UInt8]] = [
        [0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xE0, 0x80, 0xAF, 0x22],
        [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0x80, 0x22],
        [0x22, 0xC3, 0x22], [0x22, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0xE2, 0x82, 0x22],
        [0x22, 0xF8, 0x88, 0x80, 0x80, 0x80, 0x22],
    ]

    @Test("strings with invalid UTF-8 are refused", arguments: invalidUTF8)
    func refusesInvalidUTF8(_ bytes: [UInt8]) {
        #expect(throws: JSONError.self) { try JSONDocument(parsing: bytes) }
        do {
            _ = try JSONDocument(parsing: bytes)
        } catch {
            #expect(error.reason == .invalidUTF8)
        }
    }

    @Test("nesting beyond the depth limit is refused, at the limit accepted")
    func depthLimit() throws {
        let ok = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        _ = try JSONDocument(parsing: Array(ok.utf8), maxDepth: 32)
        let deep = String(repeating: "[", count: 33) + String(repeating: "]", count: 33)
        #expect(throws: JSONError(.tooDeep, at: 32)) { try JSONDocument(parsing: Array(deep.utf8), maxDepth: 32) }
        let huge = String(repeating: "{\"a\":", count: 100_000)
        #expect(throws: JSONError.self) { try JSONDocument(parsing: Array(huge.utf8), maxDepth: 512) }
    }

    @Test("a text of N values and keys is scanned at maxValues N and refused at N - 1, with a bounded tape")
    func valueLimit() throws {
        // An object counts its keys.
        let object = Array(#"{"a":1,"b":[true],"c":"x"}"#.utf8)
        // 1 (object) + 3 keys + 3 values + the array's element = 8 tokens.
        let document = try JSONDocument(parsing: object, maxValues: 8)
        #expect(document.tape.count == 8)
        #expect(throws: JSONError(.tooManyValues, at: 22)) { try JSONDocument(parsing: object, maxValues: 7) }
        // 10 MiB of [0,0,...]: 5 million values, 80 MB of tape without a limit. At 1,000 the scan stops
        // at the 1,000th zero (the array is the first token).
        var dense = [UInt8](repeating: UInt8(ascii: ","), count: 10 << 20 + 1)
        for index in stride(from: 1, to: dense.count, by: 2) { dense[index] = UInt8(ascii: "0") }
        dense[0] = UInt8(ascii: "[")
        dense[dense.count - 1] = UInt8(ascii: "]")
        #expect(throws: JSONError(.tooManyValues, at: 1 + 2 * 999)) {
            try JSONDocument(parsing: dense, maxValues: 1000)
        }
        // A text that could pass its limit is counted as it is scanned, and its tape grows only up to
        // the limit: `[0, 0, ...]` of 3 million zeros (3 bytes each) at exactly its own count, then one less.
        var spaced = [UInt8](repeating: UInt8(ascii: " "), count: 3 * 3_000_000 + 1)
        for index in stride(from: 1, to: spaced.count, by: 3) {
            spaced[index] = UInt8(ascii: "0")
            spaced[index + 1] = UInt8(ascii: ",")
        }
        spaced[0] = UInt8(ascii: "[")
        spaced[spaced.count - 2] = UInt8(ascii: " ")
        spaced[spaced.count - 1] = UInt8(ascii: "]")
        let count = 1 + 3_000_000
        let whole = try JSONDocument(parsing: spaced, maxValues: count)
        #expect(whole.tape.count == count)
        #expect(whole.tape.capacity <= count + 2 + 256, "the tape grows only up to the limit")
        #expect(throws: JSONError(.tooManyValues, at: 1 + 3 * 2_999_999)) {
            try JSONDocument(parsing: spaced, maxValues: count - 1)
        }
    }

    @Test("every truncation of a valid document is an error, never a crash")
    func truncations() throws {
        let text =
            #"{"event_name":"purchase","data":{"revenue":29.99,"tags":["a","b\u00e9"],"ok":true,"x":null,"n":-1e-5,"s":"ünï😀"},"timestamp":"2026-06-01T10:20:30.123Z"}"#
        let bytes = Array(text.utf8)
        _ = try JSONDocument(parsing: bytes)
        for cut in 0..<bytes.count {
            #expect(throws: JSONError.self) { try JSONDocument(parsing: Array(bytes[0..<cut])) }
        }
    }

    @Test("member lookup, strings, numbers and raw slices read what was written")
    func accessors() throws {
        let text =
            #"{"name":"plain","esc":"a\"b\u00e9\ud83d\ude00","n":42,"neg":-9223372036854775808,"big":9223372036854775808,"f":29.99,"obj":{"k":[1,2,3]},"t":true,"z":null,"name":"second"}"#
        let document = try JSONDocument(parsing: Array(text.utf8))
        let root = document.root
        #expect(root.kind == .object)
        #expect(root.count == 10)
        #expect(root["name"]?.string == "plain")
        #expect(root["esc"]?.string == "a\"bé😀")
        #expect(root["n"]?.int64 == 42)
        #expect(root["n"]?.double == 42)
        #expect(root["neg"]?.int64 == Int64.min)
        #expect(root["big"]?.int64 == nil)
        #expect(root["big"]?.double == 9223372036854775808)
        #expect(root["f"]?.double == 29.99)
        #expect(root["f"]?.int64 == nil)
        #expect(root["t"]?.bool == true)
        #expect(root["z"]?.isNull == true)
        #expect(root["missing"] == nil)
        let object = try #require(root["obj"])
        #expect(String(decoding: object.rawBytes, as: UTF8.self) == #"{"k":[1,2,3]}"#)
        #expect(object.nestingDepth == 2)
        #expect(root.nestingDepth == 3)
        let list = try #require(object["k"])
        #expect(list.elements.map { $0.int64 } == [1, 2, 3])
        #expect(list.count == 3)
        #expect(root["esc"]?.stringEquals("a\"bé😀") == true)
        #expect(root["esc"]?.stringEquals("a\"be😀") == false)
    }

    @Test("numbers out of range read as nil rather than infinity or a wrapped integer")
    func hugeNumbers() throws {
        let document = try JSONDocument(
            parsing: Array("[1e400, -1e400, 1e-400, 123456789012345678901234567890, 9223372036854775807, 1.0]".utf8))
        let values = Array(document.root.elements)
        #expect(values[0].double == nil)
        #expect(values[1].double == nil)
        #expect(values[2].double == 0)
        #expect(values[3].int64 == nil)
        #expect(values[3].double == 1.2345678901234568e29)
        #expect(values[4].int64 == Int64.max)
        #expect(values[5].int64 == nil)
        #expect(values[5].double == 1)
    }
}
