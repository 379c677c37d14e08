import Foundation
import Glibc
import TestSupport
import Testing

/// The hostile corpus and what was accepted of it.
struct AcceptedCorpus {
    /// A piece of a JSON string: its escaped JSON text and the text PostgreSQL must then hold.
    struct Piece {
        var json: String
        var stored: String

        init(_ json: String, _ stored: String) {
            self.json = json
            self.stored = stored
        }

        /// A piece with no escapes: sent and stored as is.
        init(plain: String) {
            json = plain
            stored = plain
        }

        static func + (a: Piece, b: Piece) -> Piece { Piece(a.json + b.json, a.stored + b.stored) }
        var literal: String { "\"" + json + "\"" }
    }

    enum Table: String { case event, click, match }

    /// One element sent: where it goes, the key its row is found by, and the columns to compare.
    struct Expected {
        var table: Table
        var key: String
        var label: String
        var columns: [String: String?]
        var source: String
        var device: String?
        var linkPath: String?
    }

    var random: SeededGenerator
    var serial = 0
    var accepted: [Table: [Expected]] = [:]
    var rejectedCount = 0
    var rejectionCodes: [String: Int] = [:]
    var problems: [String] = []
    /// Accepted device ids (as stored, by bytes) and link paths.
    var devices = Set<[UInt8]>()
    var linkPaths = Set<[UInt8]>()
    /// Keys already used (by bytes), so every element has its own row.
    private var keys = Set<[UInt8]>()

    init(seed: UInt64) { random = SeededGenerator(state: seed) }

    /// Posts `count` SDK events, one per request (every fourth on the retention route), and records
    /// each answer.
    mutating func postSingles(_ count: Int, to server: ServeProcess, app: AppKeys) throws {
        for index in 0..<count {
            let retention = index % 4 == 3
            let (event, expected) = sdkEvent(retention: retention, batch: false)
            let path = retention ? "/api/analytics/retention" : "/api/analytics/event"
            let answer = try server.post(path, key: app.publishable, app: app.id, body: event, headers: sdkHeader())
            record(answer, [expected], request: "\(path) #\(index)")
        }
    }

    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }
    mutating func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &random)] }

    /// An incompressible string of `count` scalars (ASCII letters and digits, some two- and
    /// three-byte scalars), so neither TOAST nor an index can shrink it.
    mutating func noise(_ count: Int) -> Piece {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.éßЖ中")
        var text = ""
        text.unicodeScalars.reserveCapacity(count)
        for _ in 0..<count { text.append(alphabet[Int.random(in: 0..<alphabet.count, using: &random)]) }
        return Piece(plain: text)
    }

    /// The catalogue of hostile string pieces.
    static let pieces: [Piece] = [
        Piece(plain: ""), Piece(plain: " "), Piece(plain: "   \u{3000}"), Piece("\\t", "\t"), Piece("\\n", "\n"),
        Piece("\\r\\n", "\r\n"), Piece("\\u0000", "\u{FFFD}"), Piece("a\\u0000b", "a\u{FFFD}b"),
        Piece("\\u0000\\u0000", "\u{FFFD}\u{FFFD}"), Piece("\\ud800", "\u{FFFD}"), Piece("\\udfff", "\u{FFFD}"),
        Piece("x\\ud83d", "x\u{FFFD}"), Piece("\\ud83d\\ude00", "😀"), Piece(plain: "😀"), Piece(plain: "\u{FFFF}"),
        Piece("\\uffff", "\u{FFFF}"), Piece("\\ufffe", "\u{FFFE}"), Piece(plain: "\u{10FFFF}"),
        Piece("\\udbff\\udfff", "\u{10FFFF}"), Piece(plain: "\u{202E}abc\u{200F}"), Piece(plain: "\u{FEFF}bom"),
        Piece(plain: "\u{200D}\u{200B}"), Piece(plain: "caf\u{00E9}"), Piece(plain: "cafe\u{0301}"),
        Piece(plain: "e\u{0301}\u{0302}\u{0303}\u{0304}\u{0305}"), Piece(plain: "\u{FB01}"), Piece(plain: "Ω\u{2126}"),
        Piece("\\\\", "\\"), Piece("\\\\.", "\\."), Piece("\\\\N", "\\N"), Piece("\\\\\\\\", "\\\\"),
        Piece("\\\"", "\""), Piece("\\/", "/"), Piece(plain: "'"), Piece(plain: "';--"), Piece(plain: "%00"),
        Piece(plain: "%FF"), Piece(plain: "%2F"), Piece(plain: "%"), Piece(plain: "%zz"), Piece("\\u007f", "\u{7F}"),
        Piece("\\u0085", "\u{85}"), Piece("\\u2028\\u2029", "\u{2028}\u{2029}"), Piece("\\u001b[31m", "\u{1B}[31m"),
        Piece(plain: "NULL"), Piece(plain: "null"), Piece(plain: "<script>"), Piece(plain: "{}"),
        Piece(plain: "1e999999"), Piece("\\u00e9", "é"), Piece("\\u0065\\u0301", "e\u{0301}"),
        Piece(plain: "\u{0627}\u{0644}\u{0639}\u{0631}\u{0628}\u{064A}\u{0629}"),
    ]

    /// Hostile JSON values for `data` and `metadata` (any JSON is accepted there).
    static let values: [String] = [
        "1e999999", "-1e999999", "1e-400", "-1e-999999", "-0", "-0.0", "123456789012345678901234567890",
        String(repeating: "9", count: 400), "0." + String(repeating: "0", count: 500) + "1", "1E+2", "true", "false",
        "\"\"", "\"\\u0000\"", "{\"\\u0000\":\"\\u0000\"}", "{\"a\\u0000b\":1}", "[\"\\ud800\",\"\\udc00x\"]",
        "{\"\\ud83d\":\"\\ude00\"}", "\"\\uffff\\ufffe\"", "{\"a\":1,\"a\":2}", "{}", "[]",
        "[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]",
        "{\"k\":\"\\\\N\",\"t\":\"\\t\\n\\r\",\"q\":\"\\\"\"}", "{\"revenue\":1e999999,\"currency\":\"\\u0000\"}",
        "{\"revenue\":-0,\"value\":1e-400}", "\"caf\u{00E9}\"", "\"cafe\u{0301}\"",
        "{\"caf\u{00E9}\":1,\"cafe\u{0301}\":2}",
        "[1e999999,1e-999999,-1e999999]", "{\"n\":123456789012345678901234567890.123456789e-5}", "0", "\"\\u2028\"",
    ]

    static let timestamps: [String] = [
        "2026-06-01T10:20:30.123Z", "2026-06-01t10:20:30.123z", "0001-01-01T00:00:00Z", "0000-01-01T00:00:00Z",
        "0000-01-01T00:30:00+01:00", "0000-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999999Z",
        "9999-12-31T23:59:59.999-23:59", "9999-12-31T20:00:00+23:59", "1970-01-01T00:00:00Z",
        "1969-12-31T23:59:59.999999Z", "2024-02-29T12:00:00+14:00", "2026-06-01T10:20:30.1234567+0530",
        "2026-06-01T10:20:30-12", "2026-06-01T10:20:30.000000001Z", "1582-10-10T00:00:00Z", "2026-13-01T00:00:00Z",
        "2026-06-01T24:00:00Z", "2026-06-01T23:59:60Z", "2026-06-01T10:20:30+99:99", "2026-06-01T10:20:30",
        "1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "2026-06-01T10:20:30.Z", "2026-06-01 10:20:30Z",
    ]

    /// Mostly a readable time (so most elements are accepted), else any of the catalogue.
    mutating func timestamp() -> String {
        "\"" + (chance(0.3) ? "2026-06-0\(Int.random(in: 1...9, using: &random))T10:20:30.123Z" : pick(Self.timestamps))
            + "\""
    }

    static let platforms = ["ios", "IOS", "Android", "aNdRoId", "ios", "android", "web", ""]
    static let sdkHeaders = [
        "ios/1.0.2", "react-native/0.0.0-\u{0}", "  ", "x\\y", "a\"b", "%00", "flutter/99999999999999999999",
        "android/1.0.0 (build; \u{7F})",
    ]

    mutating func sdkHeader() -> [(String, String)] {
        chance(0.5) ? [] : [("X-SDK", pick(Self.sdkHeaders).replacingOccurrences(of: "\u{0}", with: ""))]
    }

    mutating func sentAt() -> String? {
        chance(0.4)
            ? nil
            : pick([
                "\"2026-06-01T10:20:30Z\"", "\"0000-01-01T00:00:00Z\"", "\"9999-12-31T23:59:59.999Z\"", "\"nope\"",
                "1e999999", "\"1970-01-01T00:00:00+23:59\"", "null",
            ])
    }

    /// A string for a member: usually one or two pieces, sometimes a near-limit one.
    mutating func text(long: Int = 0) -> Piece {
        if long > 0 && chance(0.06) { return noise(Int.random(in: long / 2...long, using: &random)) }
        var piece = pick(Self.pieces)
        if chance(0.5) { piece = piece + Piece(plain: "|") + pick(Self.pieces) }
        return piece
    }

    /// A unique suffix: `~#<n>`.
    mutating func marker() -> Piece {
        serial += 1
        return Piece(plain: "~#\(serial)")
    }

    /// A key that no other element used (by UTF-8 bytes); adds a marker when needed.
    mutating func unique(_ piece: Piece) -> Piece {
        var piece = piece
        if keys.contains(Array(piece.stored.utf8)) || chance(0.8) { piece = piece + marker() }
        keys.insert(Array(piece.stored.utf8))
        return piece
    }

    /// An SDK event (single route when `batch` is false) and what its row must hold.
    mutating func sdkEvent(retention: Bool, batch: Bool) -> (String, Expected) {
        var members: [(String, String)] = []
        var columns: [String: String?] = [:]
        // The name is the row's key for hashed ids: NFC/NFD twins now and then, else a marker.
        var name: Piece
        if chance(0.05) {
            serial += 1
            name =
                Piece(plain: "twin\(serial)-")
                + (chance(0.5) ? Piece(plain: "caf\u{00E9}") : Piece(plain: "cafe\u{0301}"))
            let other =
                Piece(plain: "twin\(serial)-")
                + Piece(plain: name.stored.hasSuffix("\u{00E9}") ? "cafe\u{0301}" : "caf\u{00E9}")
            keys.insert(Array(other.stored.utf8))
            if keys.contains(Array(name.stored.utf8)) { name = name + marker() }
        } else if chance(0.05) {
            // Near the 128-scalar limit, with combining marks and four-byte scalars.
            serial += 1
            let tail = "~#\(serial)"
            let fill = 128 - tail.count - Int.random(in: 0...1, using: &random)
            name = Piece(
                plain: String(repeating: pick(["e\u{0301}", "😀", "\u{FFFF}", "x"]), count: fill).unicodeScalars
                    .prefix(fill).map(String.init).joined() + tail)
        } else {
            name = text() + marker()
        }
        keys.insert(Array(name.stored.utf8))
        members.append(("event_name", name.literal))
        columns["name"] = name.stored
        columns["kind"] = retention ? "retention" : "event"
        members.append(("timestamp", timestamp()))
        members.append(("platform", "\"" + pick(Self.platforms) + "\""))
        let device: Piece
        if chance(0.3) {
            // Upper case: lowercased by ingest.
            let hex = (0..<4).map { _ in String(random.next(), radix: 16, uppercase: true) }.joined()
            let digits = Array(String(repeating: "0", count: 64) + hex).suffix(32).map(String.init).joined()
            let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
                String(digits.dropFirst(range.lowerBound).prefix(range.count))
            }
            device = Piece(plain: parts.joined(separator: "-"))
        } else if chance(0.1) {
            device = noise(chance(0.5) ? 128 : 129)
        } else {
            device = text() + Piece(plain: "d")
        }
        members.append(("device_id", device.literal))
        var key = name.stored
        if batch && chance(0.7) {
            let id = unique(text())
            members.append(
                (pick(["event_id", "event_id", "message_id", "messageId", "insert_id", "uuid"]), id.literal))
            key = id.stored
            columns["event_id"] = id.stored
        }
        if chance(0.7) {
            var attribution: [(String, String)] = []
            var values: [String: String?] = ["install_click_id": nil, "open_click_id": nil, "open_type": nil]
            for member in ["install_click_id", "open_click_id", "open_type"] where chance(0.7) {
                if chance(0.2) {
                    attribution.append((member, "null"))
                } else {
                    let value =
                        member == "open_type" && chance(0.5)
                        ? Piece(plain: pick(["organic", "deferred", "verified", "scheme"])) : text(long: 16_000)
                    attribution.append((member, value.literal))
                    values[member] = value.stored
                }
            }
            if chance(0.05) {
                members.append(("attribution", "null"))
            } else {
                members.append(
                    ("attribution", "{" + attribution.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"))
                for (member, value) in values { columns[member] = value }
            }
        }
        if chance(0.4) {
            if chance(0.15) {
                members.append(("click_id", "null"))
            } else {
                let value = text(long: 16_000)
                members.append(("click_id", value.literal))
                columns["click_id"] = value.stored.isEmpty ? nil : value.stored
            }
        }
        for member in ["data", "metadata"] {
            columns["has_" + member] = "false"
            guard chance(retention ? 0.2 : 0.7) else { continue }
            let value: String
            if chance(0.05) {
                value = "null"
            } else if chance(0.05) {
                value = "{\"blob\":" + noise(Int.random(in: 12_000...15_000, using: &random)).literal + "}"
            } else if chance(0.6) {
                value = pick(Self.values)
            } else {
                value = "{" + text().literal + ":" + text().literal + ",\"n\":" + pick(Self.values) + "}"
            }
            members.append((member, value))
            columns["has_" + member] = value == "null" ? "false" : "true"
        }
        if chance(0.3) { members.append(("sdk", (chance(0.1) ? noise(129) : text()).literal)) }
        if batch && retention { members.append(("type", "\"retention\"")) }
        let json = "{" + members.shuffled(using: &random).map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
        let deviceStored =
            device.stored.count == 36 && device.stored.contains("-") ? device.stored.lowercased() : device.stored
        return (
            json,
            Expected(
                table: .event, key: key, label: "name \(String(reflecting: name.stored).prefix(60))", columns: columns,
                source: json, device: deviceStored)
        )
    }

    static let appHash = "VnAqasAabE"

    /// A click of the link service and what its row must hold.
    mutating func click() -> (String, Expected) {
        var members: [(String, String)] = []
        var columns: [String: String?] = [:]
        let id = unique(text())
        members.append(("click_id", id.literal))
        let pathPiece: Piece
        if chance(0.08) {
            pathPiece = Piece(plain: "/") + noise(Int.random(in: 4_000...16_000, using: &random))
        } else {
            pathPiece = Piece(
                plain: pick([
                    "", "/", "/articles/2", "/%00", "/%FF%FE", "/a%2Fb", "//", "/./../x", "/caf\u{00E9}",
                    "/cafe\u{0301}",
                    "/\u{202E}txt", "/a b", "/%", "/\u{FFFF}", "/%E2%80%AE", "/a;b=c", "/:@!$&'()*+,;=",
                ]))
        }
        let query = pick([
            "", "?", "?utm_source=%00", "?%FF=1", "?utm_source=news&utm_medium=%FF&utm_campaign=%E2%80%AE", "?=x&a",
            "?a=1&a=2", "?+=+", "?%zz=%", "?caf%C3%A9=1&cafe%CC%81=2",
            "?utm_source=" + String(repeating: "%41", count: 2000),
            "?utm_campaign=%5C%5C%2E&x=%5CN", "?a=%00%00&b=%ED%A0%80", "?&&&", "?utm_source=\u{00E9}",
        ])
        let fragment = chance(0.1) ? "#frag%00" : ""
        let base = pick([
            "https://acme.godetour.link/\(Self.appHash)", "HTTPS://ACME.GODETOUR.LINK/\(Self.appHash)",
            "http://127.0.0.1:0/\(Self.appHash)", "https://[::1]/\(Self.appHash)", "https://u:p@host/\(Self.appHash)",
            "myapp://open/\(Self.appHash)", "https://xn--caf-dma.example/\(Self.appHash)",
            "https://h\u{00E9}st/\(Self.appHash)",
        ])
        let url = base + pathPiece.stored + query + fragment
        let urlPiece = Piece(plain: url)
        members.append(
            ("url", (chance(0.1) ? Piece(url.replacingOccurrences(of: "/", with: "\\/"), url) : urlPiece).literal))
        columns["url"] = url
        members.append(("timestamp", timestamp()))
        if chance(0.8) {
            members.append(("platform", "\"" + pick(["ios", "android", "desktop", "unknown", "IOS"]) + "\""))
        }
        let kind = pick(["web", "universal_link", "web", "Web"])
        members.append(("kind", "\"" + kind + "\""))
        columns["click_kind"] = kind
        for member in ["user_agent", "ip", "referrer"] {
            columns[member] = nil
            guard chance(0.6) else { continue }
            let value = text(long: 16_000)
            members.append((member, value.literal))
            columns[member] = value.stored
        }
        let json = "{" + members.shuffled(using: &random).map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
        var path: String?
        if !pathPiece.stored.contains("?") && !pathPiece.stored.contains("#") {
            path = pathPiece.stored.isEmpty ? "/" : pathPiece.stored
            columns["path"] = path
        }
        return (
            json,
            Expected(
                table: .click, key: id.stored, label: "click_id \(String(reflecting: id.stored).prefix(60))",
                columns: columns, source: json, linkPath: path)
        )
    }

    /// A match of the link service and what its row must hold.
    mutating func match() -> (String, Expected) {
        var members: [(String, String)] = []
        var columns: [String: String?] = [:]
        let id = unique(text())
        members.append(("click_id", id.literal))
        members.append(("timestamp", timestamp()))
        let method = pick(["deterministic", "probabilistic", "probabilistic", "Deterministic"])
        members.append(("method", "\"" + method + "\""))
        columns["method"] = method
        columns["score"] = nil
        if chance(0.8) {
            let (score, stored) = pick(
                [
                    ("850", "850"), ("-0", "0"), ("1e-400", "0"), ("1e308", nil), ("-1e308", nil),
                    ("2147483647.5", nil),
                    ("1999999999.4", "1999999999"), ("-1999999999.4", "-1999999999"), ("0.5", "1"), ("-0.5", "-1"),
                    ("123456789012345678901234567890", nil), ("1e400", nil), ("\"850\"", nil), ("null", nil),
                    ("1E2", "100"),
                    ("849.9999999999999999999", "850"), ("4.9e-324", "0"),
                ] as [(String, String?)])
            members.append(("score", score))
            columns["score"] = stored
        }
        let json = "{" + members.shuffled(using: &random).map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
        return (
            json,
            Expected(
                table: .match, key: id.stored, label: "click_id \(String(reflecting: id.stored).prefix(60))",
                columns: columns, source: json)
        )
    }

    /// Records an answer to a request of `expectations.count` elements: 200 with `accepted` and
    /// `rejected` indices that add up, or a 400 naming a rejection of every element.
    mutating func record(_ answer: RawHTTP.Response, _ expectations: [Expected], request: String) {
        guard let json = answer.json, let acceptedCount = json["accepted"] as? Int else {
            problems.append("\(request): \(answer.status) \(answer.text.prefix(300))")
            return
        }
        let rejected = (json["rejected"] as? [[String: Any]]) ?? []
        var rejectedIndices = Set<Int>()
        for rejection in rejected {
            guard let index = rejection["index"] as? Int, let code = rejection["code"] as? String else { continue }
            rejectedIndices.insert(index)
            rejectionCodes[code, default: 0] += 1
        }
        rejectedCount += rejectedIndices.count
        if acceptedCount + rejectedIndices.count != expectations.count {
            problems.append(
                "\(request): accepted \(acceptedCount) + rejected \(rejectedIndices.count) != \(expectations.count)")
        }
        if acceptedCount > 0 && answer.status != 200 {
            problems.append("\(request): accepted with status \(answer.status)")
        }
        for (index, expected) in expectations.enumerated() where !rejectedIndices.contains(index) {
            accepted[expected.table, default: []].append(expected)
            if let device = expected.device { devices.insert(Array(device.utf8)) }
            if let path = expected.linkPath { linkPaths.insert(Array(path.utf8)) }
        }
    }
}
