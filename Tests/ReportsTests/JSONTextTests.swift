import Foundation
import JSONText
import Testing

/// `JSONText`, the byte writer behind ingest's answers and every report's JSON: what it writes is
/// checked by Foundation's own JSON parser, across the buffer's growth and reuse.
@Suite struct JSONTextTests {
    /// Parses `text` with Foundation (fragments allowed).
    private func parsed(_ text: JSONText) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.bytes), options: .fragmentsAllowed)
    }

    @Test(arguments: [
        0, 1, 9, 10, 11, 99, 100, 101, 999_999, 1_000_000, -1, -9, -10, -123_456_789, Int.max, Int.min,
        Int.max - 1, Int.min + 1, 9_999_999_999_999_999, 10_000_000_000_000_000, 1_000_000_000_000_000_000,
    ])
    func integers(_ value: Int) throws {
        var text = JSONText(capacity: 0)
        text.int(value)
        #expect(String(decoding: text.bytes, as: UTF8.self) == String(value))
        #expect(text.count == String(value).utf8.count)
    }

    @Test func stringsAreEscapedAsRFC8259Asks() throws {
        let samples = [
            "", "plain", "quote \" and backslash \\", "line\nfeed\rreturn\ttab", "\u{0}\u{1}\u{1f}", "é ü 😀 中文",
            "/l/1?utm_source=\"x\"", String(repeating: "long ", count: 1_000),
        ]
        for sample in samples {
            var text = JSONText(capacity: 0)
            text.string(sample)
            #expect(try parsed(text) as? String == sample, "\(sample.prefix(20))")
        }
        var text = JSONText()
        text.string("\u{1}")
        #expect(String(decoding: text.bytes, as: UTF8.self) == "\"\\u0001\"")
    }

    /// Runs of 0 to 40 bytes land byte for byte, after what was there and before what follows: up to
    /// 16 bytes are copied inline as overlapping loads and stores of 1, 4 or 8 bytes, a path per
    /// length range, and each length from 0 to 40 takes one of them or `copyMemory`. Each run is read
    /// from an allocation of exactly its size (the loads stay inside it by construction; this checks
    /// the bytes they move).
    @Test func copiesEveryLengthExactly() {
        let source = (0..<40).map { UInt8(ascii: "a") + UInt8($0 % 26) }
        for length in 0...source.count {
            let run = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(length, 1))
            defer { run.deallocate() }
            _ = run.initialize(from: source[..<length])
            var text = JSONText(capacity: 0)
            text.raw("<")
            text.json(utf8: UnsafeBufferPointer(rebasing: run[..<length]))
            text.raw(">")
            text.string(utf8: UnsafeBufferPointer(rebasing: run[..<length]))
            var expected: [UInt8] = [UInt8(ascii: "<")]
            expected += source[..<length]
            expected += [UInt8(ascii: ">"), UInt8(ascii: "\"")]
            expected += source[..<length]
            expected.append(UInt8(ascii: "\""))
            #expect(text.bytes == expected, "\(length) bytes")
        }
    }

    /// A document written from an empty buffer grows through many sizes; every byte must survive
    /// each growth, and keys, literals and raw JSON land where they were written.
    @Test func growsWithoutLosingBytes() throws {
        var text = JSONText(capacity: 0)
        let keys = JSONKeys(["a", "b\"quoted", "ü"])
        var expected: [[String: Any]] = []
        text.raw("[")
        for row in 0..<5_000 {
            if row > 0 { text.raw(",") }
            text.raw("{")
            text.key(keys, 0)
            text.int(row * 7 - 10_000)
            text.raw(",")
            text.key(keys, 1)
            text.string("row \(row)")
            text.raw(",")
            text.key(keys, 2)
            text.json(text: "12.50")
            text.raw("}")
            expected.append(["a": row * 7 - 10_000, "b\"quoted": "row \(row)", "ü": 12.5])
        }
        text.json(Array("]".utf8))
        let rows = try #require(try parsed(text) as? [[String: Any]])
        #expect(rows.count == expected.count)
        for (row, want) in zip(rows, expected) {
            #expect(row["a"] as? Int == want["a"] as? Int)
            #expect(row["b\"quoted"] as? String == want["b\"quoted"] as? String)
            #expect(row["ü"] as? Double == 12.5)
        }
        #expect(text.count == text.bytes.count)
        text.withUnsafeBytes { #expect(Array($0) == text.bytes) }
    }

    /// A reused buffer (`removeAll`, `init(reusing:)`) holds old bytes past the written ones: they
    /// must never show; `takeBytes` hands over exactly what was written and leaves the text empty.
    @Test func reuseShowsOnlyWhatWasWritten() {
        var text = JSONText(capacity: 4)
        text.string(String(repeating: "x", count: 100))
        text.removeAll()
        #expect(text.count == 0 && text.bytes.isEmpty)
        text.raw("{}")
        #expect(text.bytes == Array("{}".utf8))

        var reused = JSONText(reusing: Array(repeating: UInt8(ascii: "z"), count: 50))
        #expect(reused.count == 0 && reused.bytes.isEmpty)
        reused.int(42)
        #expect(reused.bytes == Array("42".utf8))
        let taken = reused.takeBytes()
        #expect(taken == Array("42".utf8))
        #expect(reused.count == 0 && reused.bytes.isEmpty)
        reused.raw("null")
        #expect(reused.bytes == Array("null".utf8))

        var empty = JSONText(reusing: [])
        empty.raw("x")
        #expect(empty.takeBytes() == [UInt8(ascii: "x")])
    }

    /// A buffer handed back for reuse (as the report API's pieces are) is written in place: taken,
    /// reused and filled again up to its capacity, it is the same memory, not a larger copy.
    @Test func reuseKeepsTheBuffer() {
        var first = JSONText(capacity: 0)
        first.reserve(1_000)
        for _ in 0..<100 { first.raw("[1,2,3]") }
        var taken = first.takeBytes()
        let capacity = taken.capacity
        let address = taken.withUnsafeBufferPointer { $0.baseAddress }
        // The case that matters: filling the reused buffer needs more than its last text (700 bytes)
        // but less than twice that, where growing by doubling would have moved it.
        #expect(taken.count == 700 && capacity >= 1_000 && capacity < 1_400)

        var second = JSONText(reusing: taken)
        taken = []
        second.reserve(capacity)
        for _ in 0..<(capacity / 7) { second.raw("[1,2,3]") }
        let again = second.takeBytes()
        #expect(again.count == capacity / 7 * 7)
        #expect(again.withUnsafeBufferPointer { $0.baseAddress } == address)
        #expect(again.capacity == capacity)
    }

    /// A copy is a value: writing to one never changes the other.
    @Test func copiesAreIndependent() {
        var first = JSONText(capacity: 8)
        first.raw("[1")
        var second = first
        second.raw(",2]")
        first.raw("]")
        #expect(first.bytes == Array("[1]".utf8))
        #expect(second.bytes == Array("[1,2]".utf8))
    }
}
