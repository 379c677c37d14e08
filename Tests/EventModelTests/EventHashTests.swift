import Testing

@testable import EventModel

@Suite struct EventHashTests {
    @Test("SipHash-128 matches the reference test vectors")
    func referenceVectors() {
        // From the SipHash reference implementation (vectors_sip128), key 00 01 .. 0f.
        let key: (UInt64, UInt64) = (0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908)
        let expected: [[UInt8]] = [
            [0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6, 0x6d, 0xf6, 0x72, 0x14, 0xc7, 0x55, 0x02, 0x93],
            [0xda, 0x87, 0xc1, 0xd8, 0x6b, 0x99, 0xaf, 0x44, 0x34, 0x76, 0x59, 0x11, 0x9b, 0x22, 0xfc, 0x45],
        ]
        for (length, want) in expected.enumerated() {
            let message = (0..<length).map { UInt8($0) }
            let (a, b) = message.withUnsafeBufferPointer { SipHash128.hash($0, key: key) }
            let bytes = [a, b].flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * UInt64($0))) } }
            #expect(bytes == want)
        }
    }

    @Test("streamed in pieces of any size, SipHash-128 gives the digest of the whole message")
    func streamingMatchesOneShot() {
        var generator = SystemRandomNumberGenerator()
        let key: (UInt64, UInt64) = (0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908)
        for length in Array(0..<40) + [63, 64, 65, 257, 1000] {
            let message = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let want = message.withUnsafeBufferPointer { SipHash128.hash($0, key: key) }
            for _ in 0..<20 {
                var state = SipHash128.Streaming(key: key)
                var offset = 0
                while offset < length {
                    let piece = Int.random(in: 1...min(length - offset, 19), using: &generator)
                    let bytes = message[offset..<offset + piece]
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0: for byte in bytes { state.append(byte: byte) }
                    case 1 where piece >= 8:
                        let word = bytes.prefix(8).enumerated().reduce(UInt64(0)) {
                            $0 | UInt64($1.element) << (8 * UInt64($1.offset))
                        }
                        state.append(word: word)
                        offset += 8
                        continue
                    default: Array(bytes).withUnsafeBytes { state.append($0) }
                    }
                    offset += piece
                }
                let got = state.finish()
                #expect(got == want, "length \(length)")
                // finish() leaves the state as it was.
                #expect(state.finish() == want)
            }
        }
    }

    @Test("event fields number their slots 0..<count, so each has its own slot in the normaliser's table")
    func fieldSlotsFit() {
        #expect(EventField.allCases.map(\.rawValue) == Array(0..<EventField.allCases.count))
    }

    static let received: Timestamp = Timestamp(iso8601: "2026-06-01T10:20:31.000Z")!
    static let body =
        #"{"event_name":"purchase","data":{"revenue":29.99,"currency":"USD"},"timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#

    static func id(_ body: String, app: String = "app_1", kind: EventKind = .event, received: Timestamp = received)
        throws -> String
    {
        let context = RequestContext(appID: app, receivedAt: received)
        let result = try Normalizer.single(body: Array(body.utf8), kind: kind, context: context)
        return try #require(result.accepted.first).id
    }

    @Test("a repeated request gets the same id, even received later and with the device id in upper case")
    func deterministic() throws {
        let first = try Self.id(Self.body)
        #expect(first.hasPrefix("h:") && first.utf8.count == 34)
        #expect(
            try Self.id(Self.body, received: Timestamp(microseconds: Self.received.microseconds + 3_600_000_000))
                == first)
        #expect(try Self.id(Self.body.replacingOccurrences(of: "3f2b8c1e-9a4d", with: "3F2B8C1E-9A4D")) == first)
        // Reordered members and an equivalent timestamp form hash the same.
        let reordered =
            #"{"platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","timestamp":"2026-06-01T12:20:30.123+02:00","event_name":"purchase","data":{"revenue":29.99,"currency":"USD"}}"#
        #expect(try Self.id(reordered) == first)
        // The id is pinned: changing the hash or its inputs would break dedup of retried requests.
        // The client time 2026-06-01T10:20:30.123Z is 1780309230123 ms = 0x019e82b3022b, then the
        // first 20 hex digits of the digest (until 2026-11-30 the id was "h:" + all 32 of them,
        // "h:482b383ea60d1e235d7534599daf260f").
        #expect(first == "h:019e82b3022b482b383ea60d1e235d75")
    }

    @Test("hashed ids sort by client time: the first 12 hex digits after h: are its milliseconds")
    func timeOrdered() throws {
        let times = [
            "2026-06-01T10:20:30.122Z", "2026-06-01T10:20:30.123Z", "2026-06-01T10:20:31.000Z",
            "2026-06-02T00:00:00Z", "2027-01-01T00:00:00Z",
        ]
        let ids = try times.map {
            try Self.id(Self.body.replacingOccurrences(of: "2026-06-01T10:20:30.123Z", with: $0))
        }
        #expect(ids == ids.sorted())
        for (time, id) in zip(times, ids) {
            let millis = try #require(Timestamp(iso8601: time)).microseconds / 1000
            #expect(id.dropFirst(2).prefix(12) == String(millis, radix: 16).leftPadded(to: 12))
            #expect(id.utf8.count == 34)
        }
        // Times outside 1970...10889 clamp into the prefix instead of breaking its width.
        var hash = EventHash()
        hash.append("x")
        #expect(hash.eventID(clientTime: Timestamp(microseconds: -5_000_000)).hasPrefix("h:000000000000"))
        #expect(hash.eventID(clientTime: Timestamp(microseconds: .max)).hasPrefix("h:ffffffffffff"))
    }

    @Test("app, kind, device, name, timestamp and data each change the id")
    func sensitivity() throws {
        let base = try Self.id(Self.body)
        #expect(try Self.id(Self.body, app: "app_2") != base)
        #expect(try Self.id(Self.body, kind: .retention) != base)
        #expect(try Self.id(Self.body.replacingOccurrences(of: "6a7b", with: "6a7c")) != base)
        #expect(try Self.id(Self.body.replacingOccurrences(of: "purchase", with: "purchasf")) != base)
        #expect(try Self.id(Self.body.replacingOccurrences(of: "30.123Z", with: "30.124Z")) != base)
        #expect(try Self.id(Self.body.replacingOccurrences(of: "29.99", with: "29.98")) != base)
        #expect(
            try Self.id(Self.body.replacingOccurrences(of: #""data":{"revenue":29.99,"currency":"USD"},"#, with: ""))
                != base)
    }

    @Test("length prefixes keep field boundaries apart")
    func boundaries() {
        var a = EventHash()
        a.append("ab")
        a.append("c")
        var b = EventHash()
        b.append("a")
        b.append("bc")
        let time = Timestamp(microseconds: 0)
        #expect(a.eventID(clientTime: time) != b.eventID(clientTime: time))
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
