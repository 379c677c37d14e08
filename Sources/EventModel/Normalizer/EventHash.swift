// Deterministic event ids for events sent without one.
//
// SipHash-2-4 with 128-bit output (Aumasson & Bernstein) under a fixed key, over length-prefixed
// fields: each field is its byte length as 8 little-endian bytes followed by its bytes, so field
// boundaries cannot shift ("ab","c" and "a","bc" differ). The key is a constant, not a secret: the
// point is that the same request always yields the same id, across processes and releases.
// Changing the key or the field list changes every hashed id and breaks dedup of retried requests
// across the change, so do neither lightly.

/// A 128-bit SipHash-2-4 over length-prefixed fields, rendered with the client time as `"h:"` + 32 hex
/// digits (`writeEventID`).
package struct EventHash: Sendable {
    /// The fixed key: "detour-analytics" as two little-endian words.
    static let key: (UInt64, UInt64) = (0x612d_7275_6f74_6564, 0x7363_6974_796c_616e)

    /// The hash state: the fields are hashed as they are appended, so no input buffer is kept
    /// (one was allocated and freed per request).
    private var state = SipHash128.Streaming(key: EventHash.key)

    /// Creates an empty hash input.
    package init() {}

    /// Appends one field, length-prefixed.
    package mutating func append<C: Collection<UInt8>>(_ bytes: C) {
        state.append(word: UInt64(bytes.count))
        if bytes.withContiguousStorageIfAvailable({ state.append(UnsafeRawBufferPointer($0)) }) == nil {
            for byte in bytes { state.append(byte: byte) }
        }
    }

    /// Appends one string field (its UTF-8 bytes).
    package mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { append($0) }
    }

    /// Appends an integer field (8 little-endian bytes, itself length-prefixed).
    package mutating func append(_ value: Int64) {
        state.append(word: 8)
        state.append(word: UInt64(bitPattern: value))
    }

    /// The 128-bit digest of everything appended, as two words.
    package var words: (UInt64, UInt64) { state.finish() }

    /// The 16-byte digest of everything appended (first word's bytes little-endian, then the second's).
    package var digest: [UInt8] {
        let (a, b) = words
        return [a, b].flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * UInt64($0))) } }
    }

    /// The id for an event whose client timestamp is `clientTime`: `"h:"`, 12 hex digits of that
    /// time in milliseconds, 20 hex digits of the digest (see `writeEventID`).
    package func eventID(clientTime: Timestamp) -> String { EventHash.eventID(words, clientTime: clientTime) }

    /// The 34-byte id of a digest (see `writeEventID`).
    package static func eventID(_ words: (UInt64, UInt64), clientTime: Timestamp) -> String {
        String(unsafeUninitializedCapacity: idLength) { out in
            writeEventID(words, clientTime: clientTime, to: out.baseAddress!)
            return idLength
        }
    }

    /// The length of a hashed id in bytes.
    static let idLength = 34

    /// Writes the 34 bytes of a hashed id: `h:`, then the client time in milliseconds since the
    /// epoch as 12 lowercase hex digits (clamped to 0...2^48-1, i.e. years 1970 to 10889), then
    /// the first 10 bytes of the digest as 20 hex digits (the first word's bytes little-endian,
    /// then the second's).
    ///
    /// The time prefix gives the ids locality: events arrive roughly in client-time order, so
    /// the dedup key index (`event_ids`, primary key `(app_id, event_id)`) grows at its right edge
    /// instead of taking each new key on a random leaf page, which after every checkpoint costs a
    /// full-page image per page and, once the index outgrows `shared_buffers`, a read per key
    /// (docs/aggregator.md, "Cycle cost against the data already loaded"). The client time is one
    /// of the hashed fields, so the prefix is as deterministic as the digest: a repeated request
    /// still gets the same id. 80 bits of digest within one millisecond of one app leave
    /// collisions out of reach.
    static func writeEventID(_ words: (UInt64, UInt64), clientTime: Timestamp, to out: UnsafeMutablePointer<UInt8>) {
        out[0] = UInt8(ascii: "h")
        out[1] = UInt8(ascii: ":")
        let millis = UInt64(clamping: min(max(clientTime.microseconds / 1000, 0), (1 << 48) - 1))
        for k in 0..<12 {
            out[2 + k] = JSONWriter.hexDigit(UInt8(truncatingIfNeeded: millis >> (4 * UInt64(11 - k))) & 0xF)
        }
        var k = 14
        for byte in 0..<10 {
            let word = byte < 8 ? words.0 : words.1
            let b = UInt8(truncatingIfNeeded: word >> (8 * UInt64(byte % 8)))
            out[k] = JSONWriter.hexDigit(b >> 4)
            out[k + 1] = JSONWriter.hexDigit(b & 0xF)
            k += 2
        }
    }

    /// Clears the input for reuse.
    package mutating func reset() {
        state = SipHash128.Streaming(key: EventHash.key)
    }
}

/// SipHash-2-4 with a 128-bit result.
enum SipHash128 {
    /// The digest of `message` in one pass: the plain form of the algorithm, which the reference
    /// vectors check and the streamed form (`Streaming`, what `EventHash` uses) is tested against.
    static func hash(_ message: UnsafeBufferPointer<UInt8>, key: (UInt64, UInt64)) -> (UInt64, UInt64) {
        var v0: UInt64 = key.0 ^ 0x736f_6d65_7073_6575
        var v1: UInt64 = key.1 ^ 0x646f_7261_6e64_6f6d ^ 0xee
        var v2: UInt64 = key.0 ^ 0x6c79_6765_6e65_7261
        var v3: UInt64 = key.1 ^ 0x7465_6462_7974_6573

        @inline(__always) func rotl(_ x: UInt64, _ b: UInt64) -> UInt64 { (x << b) | (x >> (64 - b)) }
        @inline(__always) func round() {
            v0 &+= v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
            v2 &+= v3; v3 = rotl(v3, 16); v3 ^= v2
            v0 &+= v3; v3 = rotl(v3, 21); v3 ^= v0
            v2 &+= v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
        }

        let n = message.count
        let blocks = n / 8
        let raw = UnsafeRawBufferPointer(message)
        for k in 0..<blocks {
            let m = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: k * 8, as: UInt64.self))
            v3 ^= m
            round(); round()
            v0 ^= m
        }
        var last = UInt64(truncatingIfNeeded: n) << 56
        for k in 0..<(n & 7) { last |= UInt64(message[blocks * 8 + k]) << (8 * UInt64(k)) }
        v3 ^= last
        round(); round()
        v0 ^= last
        v2 ^= 0xee
        round(); round(); round(); round()
        let a = v0 ^ v1 ^ v2 ^ v3
        v1 ^= 0xdd
        round(); round(); round(); round()
        let b = v0 ^ v1 ^ v2 ^ v3
        return (a, b)
    }

    /// SipHash-2-4 (128-bit) over input given in pieces: the same digest as `hash` of the
    /// concatenation (tests check this against random splits).
    struct Streaming {
        private var v0: UInt64
        private var v1: UInt64
        private var v2: UInt64
        private var v3: UInt64
        /// Bytes not yet compressed (fewer than 8), little-endian from bit 0.
        private var tail: UInt64 = 0
        private var tailBytes: UInt64 = 0
        /// Bytes appended in all.
        private var length: UInt64 = 0

        init(key: (UInt64, UInt64)) {
            v0 = key.0 ^ 0x736f_6d65_7073_6575
            v1 = key.1 ^ 0x646f_7261_6e64_6f6d ^ 0xee
            v2 = key.0 ^ 0x6c79_6765_6e65_7261
            v3 = key.1 ^ 0x7465_6462_7974_6573
        }

        @inline(__always) private static func rotl(_ x: UInt64, _ b: UInt64) -> UInt64 { (x << b) | (x >> (64 - b)) }

        @inline(__always) private mutating func round() {
            v0 &+= v1; v1 = Self.rotl(v1, 13); v1 ^= v0; v0 = Self.rotl(v0, 32)
            v2 &+= v3; v3 = Self.rotl(v3, 16); v3 ^= v2
            v0 &+= v3; v3 = Self.rotl(v3, 21); v3 ^= v0
            v2 &+= v1; v1 = Self.rotl(v1, 17); v1 ^= v2; v2 = Self.rotl(v2, 32)
        }

        @inline(__always) private mutating func compress(_ m: UInt64) {
            v3 ^= m
            round(); round()
            v0 ^= m
        }

        /// Appends one byte.
        @inline(__always) mutating func append(byte: UInt8) {
            length &+= 1
            push(byte)
        }

        /// Adds `byte` to the pending block, compressing it once it holds eight (`length` is the
        /// caller's to count).
        @inline(__always) private mutating func push(_ byte: UInt8) {
            tail |= UInt64(byte) << (8 * tailBytes)
            tailBytes += 1
            if tailBytes == 8 {
                compress(tail)
                tail = 0
                tailBytes = 0
            }
        }

        /// Appends the 8 little-endian bytes of `word`.
        @inline(__always) mutating func append(word: UInt64) {
            length &+= 8
            if tailBytes == 0 {
                compress(word)
            } else {
                // The word's low bytes complete the pending block; its high bytes stay pending.
                compress(tail | word << (8 * tailBytes))
                tail = word >> (64 - 8 * tailBytes)
            }
        }

        /// Appends `bytes`. Whole words are loaded where the input has eight bytes to read; bytes are
        /// taken one by one only from an input shorter than that.
        mutating func append(_ bytes: UnsafeRawBufferPointer) {
            // On a local copy, whose words stay in registers through the loop.
            var state = self
            let count = bytes.count
            var offset = 0
            state.length &+= UInt64(count)
            if state.tailBytes != 0 {
                guard count >= 8 else {
                    for byte in bytes { state.push(byte) }
                    self = state
                    return
                }
                // The first word's low bytes complete the pending block (its high bytes shift out).
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
                state.compress(state.tail | word << (8 * state.tailBytes))
                offset = 8 - Int(state.tailBytes)
                state.tail = 0
                state.tailBytes = 0
            }
            while count - offset >= 8 {
                state.compress(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
                offset += 8
            }
            let rest = count - offset
            if rest > 0, count >= 8 {
                // The last eight bytes, shifted down to the `rest` not yet taken.
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
                state.tail = word >> (8 * UInt64(8 - rest))
                state.tailBytes = UInt64(rest)
            } else {
                for byte in bytes[offset...] { state.push(byte) }
            }
            self = state
        }

        /// The digest of everything appended (the state is left as it was).
        func finish() -> (UInt64, UInt64) {
            var copy = self
            let last = tail | (length << 56)
            copy.compress(last)
            copy.v2 ^= 0xee
            copy.round(); copy.round(); copy.round(); copy.round()
            let a = copy.v0 ^ copy.v1 ^ copy.v2 ^ copy.v3
            copy.v1 ^= 0xdd
            copy.round(); copy.round(); copy.round(); copy.round()
            let b = copy.v0 ^ copy.v1 ^ copy.v2 ^ copy.v3
            return (a, b)
        }
    }
}
