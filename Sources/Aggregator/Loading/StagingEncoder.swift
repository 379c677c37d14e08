import CivilTime
import EventModel

/// Turns envelopes into rows of PostgreSQL's COPY text format: one encoder per target table
/// (`events`, `clicks`, `matches` directly, the slim `pg_temp.load_staging`, and the derived-row
/// temporary tables). The binary format's rows (`events` itself, the dedup keys and the derived
/// rows) are in StagingEncoder+Binary.swift.
///
/// Each table's column order is its `...Columns` list, which the COPY statements in `LoadSQL` name.
/// Text format rules (PostgreSQL docs, "COPY ... Text Format"): columns separated by a tab, rows
/// ended by a newline, NULL written as `\N`, and inside a value a backslash, tab, newline and
/// carriage return escaped as `\\`, `\t`, `\n`, `\r`. Nothing else needs escaping; the bytes are
/// UTF-8 as the envelopes are.
///
/// A JSON `\u0000` escape cannot be stored in `jsonb` (PostgreSQL rejects it and the whole COPY
/// would fail on every retry), so inside `data`/`metadata` it is rewritten to `\ufffd`; a raw NUL
/// byte in any text becomes U+FFFD for the same reason.
struct StagingEncoder {
    /// `events` columns, in COPY order (also `pg_temp.load_event_rows`, the safe-cast fallback).
    static let eventColumns = [
        "app_id", "event_id", "kind", "name", "device_id", "platform", "sdk", "event_time", "received_at",
        "client_ts", "sent_at", "install_click_id", "open_click_id", "open_type", "click_id", "data", "metadata",
        "clock",
    ]
    /// `clicks` columns, in COPY order.
    static let clickColumns = [
        "app_id", "click_id", "event_id", "url", "path", "query", "utm_source", "utm_medium", "utm_campaign",
        "platform", "click_kind", "click_time", "received_at", "user_agent", "ip", "referrer", "clock",
    ]
    /// `matches` columns, in COPY order.
    static let matchColumns = [
        "app_id", "click_id", "event_id", "method", "score", "match_time", "received_at", "clock",
    ]
    /// `pg_temp.load_staging` columns, in COPY order: what deduplication and the rollup queue read.
    static let stagedColumns = ["kind", "app_id", "event_id", "time", "device_id", "click_id"]

    private static let tab: UInt8 = 0x09
    private static let newline: UInt8 = 0x0A
    private static let backslash: UInt8 = 0x5C
    private static let null: [UInt8] = [0x5C, 0x4E]  // \N

    /// Appends one `events` row for an envelope of kind event or retention.
    static func appendEvent(_ envelope: Envelope, to out: inout [UInt8]) {
        text(envelope.app, &out)
        text(envelope.id, &out)
        text(envelope.kind.rawValue, &out)
        text(envelope.name, &out)
        text(envelope.device, &out)
        text(envelope.platform?.rawValue, &out)
        text(envelope.sdk, &out)
        timestamp(envelope.time, &out)
        timestamp(envelope.receivedAt, &out)
        timestamp(envelope.clientTimestamp, &out)
        timestamp(envelope.sentAt, &out)
        text(envelope.attribution?.installClickID, &out)
        text(envelope.attribution?.openClickID, &out)
        text(envelope.attribution?.openType, &out)
        text(envelope.clickID, &out)
        json(envelope.data, &out)
        json(envelope.metadata, &out)
        last(envelope.clock.rawValue, &out)
    }

    /// Appends one `clicks` row for an envelope of kind click.
    static func appendClick(_ envelope: Envelope, to out: inout [UInt8]) {
        text(envelope.app, &out)
        text(envelope.clickID, &out)
        text(envelope.id, &out)
        text(envelope.url, &out)
        text(envelope.path, &out)
        query(envelope.query, &out)
        text(parameter("utm_source", envelope.query), &out)
        text(parameter("utm_medium", envelope.query), &out)
        text(parameter("utm_campaign", envelope.query), &out)
        text(envelope.platform?.rawValue, &out)
        text(envelope.clickKind?.rawValue, &out)
        timestamp(envelope.time, &out)
        timestamp(envelope.receivedAt, &out)
        text(envelope.userAgent, &out)
        text(envelope.ip, &out)
        text(envelope.referrer, &out)
        last(envelope.clock.rawValue, &out)
    }

    /// Appends one `matches` row for an envelope of kind match.
    static func appendMatch(_ envelope: Envelope, to out: inout [UInt8]) {
        text(envelope.app, &out)
        text(envelope.clickID, &out)
        text(envelope.id, &out)
        text(envelope.method?.rawValue, &out)
        if let score = envelope.score, score.isFinite, abs(score) < 2e9 {
            out.append(contentsOf: "\(Int(score.rounded()))".utf8)
        } else {
            out.append(contentsOf: null)
        }
        out.append(tab)
        timestamp(envelope.time, &out)
        timestamp(envelope.receivedAt, &out)
        last(envelope.clock.rawValue, &out)
    }

    /// Appends one `pg_temp.load_staging` row (every kind).
    static func appendStaged(_ envelope: Envelope, to out: inout [UInt8]) {
        text(envelope.kind.rawValue, &out)
        text(envelope.app, &out)
        text(envelope.id, &out)
        timestamp(envelope.time, &out)
        text(envelope.device, &out)
        text(envelope.clickID, &out)
        out[out.count - 1] = newline
    }

    private static func last(_ value: String, _ out: inout [UInt8]) {
        text(value, &out)
        out[out.count - 1] = newline
    }

    private static func parameter(_ name: String, _ query: [QueryParameter]?) -> String? {
        query?.first(where: { $0.name == name })?.value
    }

    private static func text(_ value: String?, _ out: inout [UInt8]) {
        if var value {
            value.withUTF8 { escaped($0, &out) }
        } else {
            out.append(contentsOf: null)
        }
        out.append(tab)
    }

    private static func timestamp(_ value: Timestamp?, _ out: inout [UInt8]) {
        if let value {
            appendTimestampText(value, to: &out)
        } else {
            out.append(contentsOf: null)
        }
        out.append(tab)
    }

    /// Appends `value` in the text form PostgreSQL's `timestamptz` input reads for every year:
    /// `YYYY-MM-DD HH:MM:SS.ffffff+00`, a year before 1 with the era, `0001-06-01 ... BC` for the
    /// astronomical year 0 (PostgreSQL has no year 0: 1 BC comes right before AD 1), a year past 9999
    /// with all its digits. Not the envelope's ISO-8601 form: that writes year 0 as `0000`, which
    /// PostgreSQL refuses (SQLSTATE 22008), and one such click once stopped every later cycle.
    /// The log's times are years 0000-9999, well inside PostgreSQL's range (4713 BC to AD 294276).
    static func appendTimestampText(_ value: Timestamp, to out: inout [UInt8]) {
        let perDay: Int64 = 86_400_000_000
        let days = StagingBatch.day(of: value)
        var micros = value.microseconds - days * perDay
        let (year, month, day) = CivilCalendar.date(fromDays: days)
        let isBC = year < 1
        decimal(isBC ? 1 - year : year, digits: 4, &out)
        out.append(UInt8(ascii: "-"))
        decimal(month, digits: 2, &out)
        out.append(UInt8(ascii: "-"))
        decimal(day, digits: 2, &out)
        out.append(UInt8(ascii: " "))
        decimal(micros / 3_600_000_000, digits: 2, &out)
        out.append(UInt8(ascii: ":"))
        micros %= 3_600_000_000
        decimal(micros / 60_000_000, digits: 2, &out)
        out.append(UInt8(ascii: ":"))
        micros %= 60_000_000
        decimal(micros / 1_000_000, digits: 2, &out)
        out.append(UInt8(ascii: "."))
        decimal(micros % 1_000_000, digits: 6, &out)
        out.append(contentsOf: "+00".utf8)
        if isBC { out.append(contentsOf: " BC".utf8) }
    }

    /// Appends a non-negative `value` in decimal, zero-padded to at least `digits` digits.
    private static func decimal(_ value: Int64, digits: Int, _ out: inout [UInt8]) {
        var width = 1
        var power: Int64 = 10
        while power <= value, width < 18 {
            width += 1
            power *= 10
        }
        width = max(width, digits)
        let start = out.count
        out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width))
        var rest = value
        var index = start + width - 1
        while rest > 0 {
            out[index] = UInt8(truncatingIfNeeded: 48 + rest % 10)
            rest /= 10
            index -= 1
        }
    }

    private static func json(_ value: [UInt8]?, _ out: inout [UInt8]) {
        guard let value else {
            out.append(contentsOf: null)
            out.append(tab)
            return
        }
        if let repaired = repairingEscapes(value, .nul) {
            escaped(repaired[...], &out)
        } else {
            value.withUnsafeBufferPointer { escaped($0, &out) }
        }
        out.append(tab)
    }

    /// Query parameters as a JSON object of strings (first occurrence of a name wins upstream).
    private static func query(_ parameters: [QueryParameter]?, _ out: inout [UInt8]) {
        guard let parameters else {
            out.append(contentsOf: null)
            out.append(tab)
            return
        }
        var json: [UInt8] = [UInt8(ascii: "{")]
        for (index, parameter) in parameters.enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            jsonString(parameter.name, &json)
            json.append(UInt8(ascii: ":"))
            jsonString(parameter.value, &json)
        }
        json.append(UInt8(ascii: "}"))
        escaped(json[...], &out)
        out.append(tab)
    }

    /// Writes `value` as a JSON string literal (jsonb-safe: NUL becomes U+FFFD).
    static func jsonString(_ value: String, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [backslash, UInt8(ascii: "\"")])
            case backslash: out.append(contentsOf: [backslash, backslash])
            case 0x00: out.append(contentsOf: Array("\\ufffd".utf8))
            case 0x0A: out.append(contentsOf: [backslash, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [backslash, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [backslash, UInt8(ascii: "t")])
            case 0x01..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Appends `bytes` with COPY text escaping.
    private static func escaped<C: Collection<UInt8>>(_ bytes: C, _ out: inout [UInt8]) {
        for byte in bytes {
            switch byte {
            case backslash: out.append(backslash); out.append(backslash)
            case tab: out.append(backslash); out.append(UInt8(ascii: "t"))
            case newline: out.append(backslash); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(backslash); out.append(UInt8(ascii: "r"))
            // PostgreSQL text cannot hold NUL (the whole COPY would fail on every retry): U+FFFD.
            case 0x00: out.append(contentsOf: [0xEF, 0xBF, 0xBD])
            default: out.append(byte)
            }
        }
    }
}

extension StagingEncoder {
    /// Appends `envelope` as one CSV row in the staging column order (the loader benchmark's
    /// `psql \copy` baseline): every value quoted, quotes doubled, NULL as an empty unquoted field.
    static func appendCSV(_ envelope: Envelope, to out: inout [UInt8]) {
        var query: [UInt8]?
        if let parameters = envelope.query {
            var json: [UInt8] = [UInt8(ascii: "{")]
            for (index, parameter) in parameters.enumerated() {
                if index > 0 { json.append(UInt8(ascii: ",")) }
                jsonString(parameter.name, &json)
                json.append(UInt8(ascii: ":"))
                jsonString(parameter.value, &json)
            }
            json.append(UInt8(ascii: "}"))
            query = json
        }
        func utf8(_ value: String?) -> [UInt8]? { value.map { Array($0.utf8) } }
        func parameter(_ name: String) -> [UInt8]? { utf8(envelope.query?.first(where: { $0.name == name })?.value) }
        let fields: [[UInt8]?] = [
            utf8(envelope.kind.rawValue), utf8(envelope.app), utf8(envelope.id), utf8(envelope.time.iso8601),
            utf8(envelope.receivedAt.iso8601), utf8(envelope.clock.rawValue), utf8(envelope.name),
            utf8(envelope.device),
            utf8(envelope.platform?.rawValue), utf8(envelope.sdk), utf8(envelope.clientTimestamp?.iso8601),
            utf8(envelope.sentAt?.iso8601), utf8(envelope.attribution?.installClickID),
            utf8(envelope.attribution?.openClickID), utf8(envelope.attribution?.openType), utf8(envelope.clickID),
            envelope.data, envelope.metadata, utf8(envelope.url), utf8(envelope.path), query, parameter("utm_source"),
            parameter("utm_medium"), parameter("utm_campaign"), utf8(envelope.clickKind?.rawValue),
            utf8(envelope.userAgent), utf8(envelope.ip), utf8(envelope.referrer), utf8(envelope.method?.rawValue),
            utf8(envelope.score.map { "\(Int($0.rounded()))" }),
        ]
        for (index, field) in fields.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            guard let field else { continue }
            out.append(UInt8(ascii: "\""))
            for byte in field {
                if byte == UInt8(ascii: "\"") { out.append(byte) }
                out.append(byte)
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(newline)
    }
}
