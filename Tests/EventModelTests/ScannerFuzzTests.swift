import TestSupport
import Testing

@testable import EventModel

/// Bounded, deterministic mutation testing: damaged bodies must produce errors or rejections, never crashes.
@Suite struct ScannerFuzzTests {

    static let interesting: [UInt8] =
        Array(#"{}[]",:\u0-1eE.+tfn "#.utf8) + [0x00, 0x1F, 0x7F, 0x80, 0xC3, 0xE2, 0xED, 0xF0, 0xF4, 0xFF]

    func walk(_ value: JSONValue) {
        switch value.kind {
        case .object:
            for (key, member) in value.members {
                _ = key.string
                walk(member)
            }
        case .array:
            for element in value.elements { walk(element) }
        case .string:
            _ = value.string
        case .number:
            _ = value.double
            _ = value.int64
        case .bool, .null:
            _ = value.rawBytes
        }
    }

    @Test("3,000 mutated SDK batches never crash the scanner or the normaliser")
    func mutations() {
        var random = SeededGenerator(state: 42)
        let seed = ScannerBenchmark.sampleBodies
        let context = RequestContext(appID: "app", receivedAt: Timestamp(iso8601: "2026-06-01T10:20:31.000Z")!)
        var accepted = 0
        for round in 0..<3000 {
            var body = seed[round % seed.count]
            for _ in 0..<(1 + random.below(4)) {
                let at = random.below(body.count)
                switch random.below(3) {
                case 0: body[at] = Self.interesting[random.below(Self.interesting.count)]
                case 1: body.remove(at: at)
                default: body.insert(Self.interesting[random.below(Self.interesting.count)], at: at)
                }
            }
            if let document = try? JSONDocument(parsing: body) {
                walk(document.root)
                accepted += 1
            }
            _ = try? Normalizer.batch(body: body, context: context)
            _ = try? Normalizer.single(body: body, kind: .event, context: context)
            _ = try? Normalizer.linkEvents(body: body, context: context)
        }
        #expect(accepted > 0)
        #expect(accepted < 3000)
    }

    @Test("every envelope line cut short is refused, never a crash")
    func truncatedEnvelopes() throws {
        let body = ScannerBenchmark.sampleBodies[3]
        let context = RequestContext(
            appID: "app", sdkHeader: "ios/1.0.2", receivedAt: Timestamp(iso8601: "2026-07-20T08:00:01.000Z")!)
        let line = try #require(try Normalizer.single(body: body, kind: .event, context: context).accepted.first)
            .encoded()
        for cut in 0..<line.count {
            #expect(throws: EnvelopeError.self) { try Envelope(decoding: line[0..<cut]) }
        }
    }
}
