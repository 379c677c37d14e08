import EventModel

// The COPY binary format (PostgreSQL docs, "COPY ... Binary Format"), for `events` itself, the
// dedup keys and the derived-row tables: the server parses no timestamps and scans no escapes.
// The text format and the table's column lists are in StagingEncoder.swift.

extension StagingEncoder {
    /// The header of a binary COPY stream: signature, flags (0), header extension length (0).
    static let binaryHeader: [UInt8] = Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [0, 0, 0, 0, 0, 0, 0, 0]
    /// The trailer of a binary COPY stream (a field count of -1).
    static let binaryTrailer: [UInt8] = [0xFF, 0xFF]

    /// Appends one `events` row in COPY binary format (PostgreSQL docs, "COPY ... Binary Format"):
    /// the field count, then per field its length (-1: NULL) and its bytes in the type's binary form.
    /// The server then parses no timestamps and scans no escapes; `data`/`metadata` still go through
    /// `jsonb`'s parser (its binary form is a version byte and the JSON text). Same rewrites as the
    /// text form: a JSON `\u0000` escape and a raw NUL byte become U+FFFD. Only for `events` itself:
    /// the safe-cast fallback's text table takes the text form (`appendEvent`).
    static func appendEventBinary(_ envelope: Envelope, to out: inout [UInt8]) {
        out.append(0)
        out.append(UInt8(eventColumns.count))
        binaryText(envelope.app, &out)
        binaryText(envelope.id, &out)
        binaryText(envelope.kind.rawValue, &out)
        binaryText(envelope.name, &out)
        binaryText(envelope.device, &out)
        binaryText(envelope.platform?.rawValue, &out)
        binaryText(envelope.sdk, &out)
        binaryTimestamp(envelope.time, &out)
        binaryTimestamp(envelope.receivedAt, &out)
        binaryTimestamp(envelope.clientTimestamp, &out)
        binaryTimestamp(envelope.sentAt, &out)
        binaryText(envelope.attribution?.installClickID, &out)
        binaryText(envelope.attribution?.openClickID, &out)
        binaryText(envelope.attribution?.openType, &out)
        binaryText(envelope.clickID, &out)
        binaryJSON(envelope.data, &out)
        binaryJSON(envelope.metadata, &out)
        binaryText(envelope.clock.rawValue, &out)
    }

    /// Appends one dedup-key row (`event_ids`, `click_ids`, `match_ids`: app, id, time) in COPY
    /// binary format.
    static func appendKeyBinary(app: String, id: String, time: Timestamp, to out: inout [UInt8]) {
        out.append(0)
        out.append(3)
        binaryText(app, &out)
        binaryText(id, &out)
        binaryTimestamp(time, &out)
    }

    private static func int32(_ value: Int32, _ out: inout [UInt8]) {
        let bits = UInt32(bitPattern: value)
        out.append(UInt8(truncatingIfNeeded: bits >> 24))
        out.append(UInt8(truncatingIfNeeded: bits >> 16))
        out.append(UInt8(truncatingIfNeeded: bits >> 8))
        out.append(UInt8(truncatingIfNeeded: bits))
    }

    /// Writes the length of the field that starts after the 4 bytes at `start`.
    private static func patchLength(at start: Int, _ out: inout [UInt8]) {
        let length = UInt32(out.count - start - 4)
        out[start] = UInt8(truncatingIfNeeded: length >> 24)
        out[start + 1] = UInt8(truncatingIfNeeded: length >> 16)
        out[start + 2] = UInt8(truncatingIfNeeded: length >> 8)
        out[start + 3] = UInt8(truncatingIfNeeded: length)
    }

    /// Appends `bytes`, a raw NUL byte as U+FFFD (PostgreSQL text cannot hold NUL).
    private static func withoutNUL<C: Collection<UInt8>>(_ bytes: C, _ out: inout [UInt8]) {
        for byte in bytes {
            if byte == 0x00 { out.append(contentsOf: [0xEF, 0xBF, 0xBD]) } else { out.append(byte) }
        }
    }

    private static func binaryText(_ value: String?, _ out: inout [UInt8]) {
        guard var value else { return int32(-1, &out) }
        let start = out.count
        int32(0, &out)
        value.withUTF8 { withoutNUL($0, &out) }
        patchLength(at: start, &out)
    }

    /// Microseconds since 2000-01-01 00:00:00 UTC (PostgreSQL's epoch), big-endian.
    private static func binaryTimestamp(_ value: Timestamp?, _ out: inout [UInt8]) {
        guard let value else { return int32(-1, &out) }
        int32(8, &out)
        let bits = UInt64(bitPattern: value.microseconds &- 946_684_800_000_000)
        for shift in stride(from: 56, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
        }
    }

    private static func binaryJSON(_ value: [UInt8]?, _ out: inout [UInt8]) {
        guard let value else { return int32(-1, &out) }
        let start = out.count
        int32(0, &out)
        out.append(1)  // jsonb binary format version
        withoutNUL(repairingEscapes(value, .nul) ?? value, &out)
        patchLength(at: start, &out)
    }

    /// Appends a row of text, timestamp and date fields (the derived-row tables) in COPY binary
    /// format (the stream needs `binaryHeader` and `binaryTrailer`): the server parses no
    /// timestamp text and this process formats none.
    static func appendRowBinary(_ fields: [Field], to out: inout [UInt8]) {
        let count = UInt16(fields.count)
        out.append(UInt8(truncatingIfNeeded: count >> 8))
        out.append(UInt8(truncatingIfNeeded: count))
        for field in fields {
            switch field {
            case .text(let value): binaryText(value, &out)
            case .timestamp(let value): binaryTimestamp(value, &out)
            case .date(let day):
                // Days since 2000-01-01 (PostgreSQL's epoch; day 10,957 since 1970).
                int32(4, &out)
                int32(Int32(truncatingIfNeeded: day - 10_957), &out)
            }
        }
    }

    /// A field of `appendRowBinary`.
    enum Field {
        case text(String?)
        case timestamp(Timestamp?)
        /// A UTC day number (days since 1970-01-01), a `date`.
        case date(Int64)
    }
}
