import CivilTime
import Foundation
import Glibc
import JSONText
import Postgres
import TestSupport
import Testing

// AcceptedReportsTests' seeded report world (hostile client strings in every report's rows), what
// the reports showed of it, and the day text the API writes.

/// A day as the API writes it, with its number of days since 1970-01-01 (proleptic Gregorian,
/// `CivilCalendar`, as PostgreSQL and the reports count; Foundation's calendar turns Julian before 1582).
struct Day: CustomStringConvertible {
    var number: Int
    var text: String

    static let last = Day("9999-12-31")!

    init?(_ text: String) {
        let parts = text.split(separator: "-").compactMap { Int64($0) }
        guard parts.count == 3, text.count == 10 else { return nil }
        number = Int(CivilCalendar.days(year: parts[0], month: parts[1], day: parts[2]))
        self.text = text
    }

    init(number: Int) {
        self.number = number
        let date = CivilCalendar.date(fromDays: Int64(number))
        text = String(format: "%04d-%02d-%02d", Int(date.year), Int(date.month), Int(date.day))
    }

    var description: String { text }
}

/// What the API answered, gathered across windows, for the round-trip comparison.
struct Seen {
    var paths = Set<[UInt8]>()
    var eventNames = Set<[UInt8]>()
    var currencies = Set<[UInt8]>()
    var utm = Set<[UInt8]>()
    var funnelNames = Set<[UInt8]>()
    var stepNames = Set<[UInt8]>()
    var retentionPaths = Set<[UInt8]>()
    var attributionPaths = Set<[UInt8]>()
    var linkPathsByWindow: [[String]] = [[]]

    mutating func collect(_ kind: String, _ answer: ReportClient.JSONAnswer) {
        func bytes(_ value: Any?) -> [UInt8]? { (value as? String).map { Array($0.utf8) } }
        switch kind {
        case "links":
            for row in answer.tables["links"] ?? [] {
                if let path = row["path"] as? String {
                    paths.insert(Array(path.utf8))
                    linkPathsByWindow[linkPathsByWindow.count - 1].append(path)
                }
                for key in ["events", "retention_events", "events_ios", "events_android"] {
                    for name in (row[key] as? [String: Any] ?? [:]).keys { eventNames.insert(Array(name.utf8)) }
                }
                for key in ["revenue", "revenue_ios", "revenue_android"] {
                    for name in (row[key] as? [String: Any] ?? [:]).keys { currencies.insert(Array(name.utf8)) }
                }
            }
            for row in answer.tables["utm"] ?? [] {
                for key in ["utm_source", "utm_medium", "utm_campaign"] {
                    if let value = bytes(row[key]) { utm.insert(value) }
                }
            }
        case "funnel":
            for row in answer.tables["funnel"] ?? [] {
                if let value = bytes(row["funnel_name"]) { funnelNames.insert(value) }
                if let value = bytes(row["step_name"]) { stepNames.insert(value) }
            }
        case "retention":
            for row in answer.tables["retention"] ?? [] {
                if let value = bytes(row["path"]) { retentionPaths.insert(value) }
            }
        case "attribution":
            for row in answer.tables["attribution"] ?? [] {
                if let value = bytes(row["path"]) { attributionPaths.insert(value) }
            }
        default: break
        }
    }

    /// The API's strings equal the views' (all of them, by bytes), and hold everything the report
    /// world made sure has rows.
    func compare(with world: ReportWorld, connection: Connection, app: String) throws {
        func set(_ sql: SQL) throws -> Set<[UInt8]> {
            Set(try connection.query(sql).compactMap { try $0["v", as: String?.self].map { Array($0.utf8) } })
        }
        func same(_ label: String, _ api: Set<[UInt8]>, _ view: Set<[UInt8]>) {
            let missing = view.subtracting(api).map { String(decoding: $0, as: UTF8.self) }
            let extra = api.subtracting(view).map { String(decoding: $0, as: UTF8.self) }
            #expect(
                missing.isEmpty && extra.isEmpty,
                "\(label): in the views, not the API: \(missing.prefix(8).map { String(reflecting: $0) }); in the API, not the views: \(extra.prefix(8).map { String(reflecting: $0) })"
            )
        }
        /// The distinct values of `column` in `view` for the app, over every day a report can name.
        func viewValues(_ column: String, _ view: String, day: String = "day") throws -> Set<[UInt8]> {
            try set(
                SQL(
                    stringLiteral: "SELECT \(column) AS v FROM \(view) WHERE app_id = '\(app)' AND \(day) "
                        + "BETWEEN '0001-01-01' AND '9999-12-31'"))
        }
        same("link paths", paths, try viewValues("path", "report_link_daily"))
        same("event names", eventNames, try viewValues("name", "report_link_daily_events"))
        same("currencies", currencies, try viewValues("currency", "report_link_daily_revenue"))
        same(
            "UTM values", utm,
            try viewValues("unnest(ARRAY[utm_source, utm_medium, utm_campaign])", "report_link_daily_utm"))
        same("funnel step names", stepNames, try viewValues("step_name", "report_funnel"))
        same("retention paths", retentionPaths, try viewValues("path", "report_retention", day: "cohort_day"))
        same("attribution paths", attributionPaths, try viewValues("path", "report_attribution"))
        // What the report world sent, as stored after the documented rewrites.
        for path in world.paths {
            #expect(paths.contains(Array(path.utf8)), "link path \(String(reflecting: path)) not in the API's links")
        }
        for path in world.paths {
            #expect(retentionPaths.contains(Array(path.utf8)), "path \(String(reflecting: path)) not in retention")
        }
        for path in world.paths {
            #expect(attributionPaths.contains(Array(path.utf8)), "path \(String(reflecting: path)) not in attribution")
        }
        for name in world.names {
            #expect(eventNames.contains(Array(name.utf8)), "event \(String(reflecting: name)) not in the links' events")
        }
        for step in ReportWorld.funnelStepsStored {
            #expect(
                stepNames.contains(Array(step.utf8)), "funnel step \(String(reflecting: step)) not in the funnel report"
            )
        }
        #expect(funnelNames.contains(Array(ReportWorld.funnelName.utf8)), "funnel name not served exactly")
    }
}

/// A seeded world that gives every report rows holding hostile client strings.
struct ReportWorld {
    struct Kind {
        var name: String
        var tables: [String]
    }

    static let kinds = [
        Kind(name: "links", tables: ["links", "utm"]), Kind(name: "funnel", tables: ["funnel"]),
        Kind(name: "retention", tables: ["retention"]), Kind(name: "attribution", tables: ["attribution", "installs"]),
    ]

    /// Days of the world (each has clicks, installs and actions; the next day an `app_open`).
    static let baseDays = [
        "2026-06-01", "0001-01-01", "0001-01-02", "1582-10-15", "1969-12-31", "2000-02-29", "2024-12-31",
    ]
    static let dailyDates = ["2026-06-01", "0001-01-01", "9999-12-31", "1969-12-31"]

    /// Hostile strings as (JSON text, stored text).
    static let strings: [(String, String)] = [
        ("<script>alert(1)<\\/script>", "<script>alert(1)</script>"), ("=HYPERLINK(\\\"x\\\")", "=HYPERLINK(\"x\")"),
        ("a,b\\\"c\\nd", "a,b\"c\nd"), ("\\\\N", "\\N"), ("x\\u0000y", "x\u{FFFD}y"), ("\\ud800z", "\u{FFFD}z"),
        ("caf\u{E9}", "caf\u{E9}"), ("cafe\u{301}", "cafe\u{301}"), ("\u{202E}rtl", "\u{202E}rtl"),
        ("\u{FFFF}", "\u{FFFF}"), ("\u{10FFFF}x", "\u{10FFFF}x"), ("😀", "😀"), ("-1+2", "-1+2"), ("@sum", "@sum"),
        ("\\ttab", "\ttab"), ("NULL", "NULL"), ("{}", "{}"), ("a&amp;b", "a&amp;b"), ("\\r\\n", "\r\n"),
        ("''", "''"), (" ", " "), ("\u{2028}", "\u{2028}"),
    ]
    /// Link paths (sent in the URL as they are, stored as sent).
    static let pathTexts = [
        "/<b>x</b>", "/=cmd|' /C calc'!A0", "/a,b\"c", "/\\N", "/caf\u{E9}", "/cafe\u{301}", "/\u{202E}txt",
        "/\u{FFFF}", "/-1", "/@x", "/a b", "/%00", "/%FF%FE", "/'quote'", "/&amp;", "/{}",
    ]
    static let utmValues = [
        "%3Cscript%3Ealert(1)%3C%2Fscript%3E", "%3D1%2B2", "a%2Cb%22c", "%00", "%FF", "%E2%80%AE", "caf%C3%A9",
        "cafe%CC%81", "%0D%0A", "%5CN", "+", "",
    ]
    static let currencies = ["usd", "<b>", "e\\u0000r", "\\\"", "EUR", "=1", "ab,c", "\u{FFFF}"]

    static let funnelName = "<i>Funnel</i> \"=1+1\", a\tb"
    static let funnelSteps = ["app_open", "<step>", "=step,2"]
    static let funnelStepsStored = funnelSteps

    var random: SeededGenerator
    var clicks: [String] = []
    var matches: [String] = []
    var events: [String] = []
    /// Stored paths and event names that must appear in the reports.
    var paths: [String] = []
    var names: [String] = []
    /// Every client string sent (stored form), for the HTML check.
    var sentTexts: [String] = []
    private var serial = 0

    init(seed: UInt64) { random = SeededGenerator(state: seed) }

    mutating func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &random)] }

    static func jsonString(_ text: String) -> String {
        var writer = JSONText()
        writer.string(text)
        return String(decoding: writer.takeBytes(), as: UTF8.self)
    }

    mutating func build() {
        var pathIndex = 0
        var nameIndex = 0
        for (dayIndex, day) in Self.baseDays.enumerated() {
            for device in 0..<3 {
                serial += 1
                let path = Self.pathTexts[pathIndex % Self.pathTexts.count]
                pathIndex += 1
                paths.append(path)
                sentTexts.append(path)
                let clickID = "rw-\(serial)-" + Self.strings[serial % Self.strings.count].0
                let query =
                    "?utm_source=\(pick(Self.utmValues))&utm_medium=\(pick(Self.utmValues))&utm_campaign=\(pick(Self.utmValues))"
                let platform = device % 2 == 0 ? "ios" : "android"
                let url = "https://acme.godetour.link/\(AcceptedCorpus.appHash)" + path + query
                clicks.append(
                    #"{"click_id":"\#(clickID)","url":\#(Self.jsonString(url)),"timestamp":"\#(day)T10:00:00Z","platform":"\#(platform)","kind":"web"}"#
                )
                matches.append(
                    #"{"click_id":"\#(clickID)","timestamp":"\#(day)T10:05:00Z","method":"deterministic","score":850}"#)
                // Device ids may not hold control characters (NUL included).
                let deviceStrings = ["caf\u{E9}", "cafe\u{301}", "😀", "<b>", "=1", "a,b", "\\\\N", "\u{FFFF}", "@x"]
                let deviceID = "rw-device-\(serial)-" + deviceStrings[serial % deviceStrings.count]
                let (name, stored) = Self.strings[nameIndex % Self.strings.count]
                nameIndex += 1
                names.append(stored)
                sentTexts.append(stored)
                let currency = pick(Self.currencies)
                func event(_ name: String, _ time: String, _ extra: String = "") -> String {
                    serial += 1
                    return
                        #"{"event_id":"rw-event-\#(serial)","event_name":"\#(name)","timestamp":"\#(time)","platform":"\#(platform)","device_id":"\#(deviceID)"\#(extra)}"#
                }
                let attribution = #","attribution":{"install_click_id":"\#(clickID)"}"#
                events.append(event("app_open", "\(day)T10:10:00Z", attribution))
                events.append(event(name, "\(day)T10:20:00Z", attribution))
                events.append(event("<step>", "\(day)T10:25:00Z"))
                events.append(event("=step,2", "\(day)T10:26:00Z"))
                events.append(event("sign_up", "\(day)T10:30:00Z"))
                events.append(
                    event(
                        "purchase", "\(day)T10:40:00Z",
                        #","data":{"revenue":"1\#(device).99","currency":"\#(currency)"}"#))
                events.append(event("refund", "\(day)T10:45:00Z", #","data":{"value":0.5,"currency":"\#(currency)"}"#))
                events.append(event("opened", "\(day)T11:00:00Z", #","attribution":{"open_click_id":"\#(clickID)"}"#))
                if day != "9999-12-31" {
                    let next = Day(number: Day(day)!.number + 1).text
                    events.append(event("app_open", "\(next)T09:00:00Z"))
                    events.append(event(name, "\(next)T09:30:00Z", #","data":{"n":\#(dayIndex)}"#))
                }
            }
        }
        sentTexts.append(Self.funnelName)
        sentTexts += Self.funnelSteps
        sentTexts += Self.currencies.filter { !$0.contains("\\") }.map { $0.uppercased() }
    }
}
