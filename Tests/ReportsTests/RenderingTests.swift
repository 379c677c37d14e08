import Foundation
import JSONText
import Reports
import Testing

@Suite struct RenderingTests {
    @Test("report parameters: defaults, ranges and every error names its parameter")
    func parseQuery() throws {
        let today = day("2026-06-30")
        let query = try ReportQuery.parse(["app": "acme"], today: today, defaultFormat: .table)
        #expect(query == ReportQuery(app: "acme", from: day("2026-06-01"), to: today, format: .table))
        let explicit = try ReportQuery.parse(
            ["app": "acme", "from": "2026-05-01", "to": "2026-05-31", "format": "JSON"], today: today,
            defaultFormat: .table)
        #expect(explicit.from == day("2026-05-01") && explicit.to == day("2026-05-31") && explicit.format == .json)
        // The default range stops at 0001-01-01 (29 days before 0001-01-10 is in year 0).
        let early = try ReportQuery.parse(["app": "acme", "to": "0001-01-10"], today: today, defaultFormat: .json)
        #expect(early.from == day("0001-01-01") && early.to == day("0001-01-10"))
        let cases: [([String: String], String)] = [
            ([:], "app"),
            (["app": "a b"], "app"),
            (["app": "acme", "from": "2026-02-30"], "from"),
            (["app": "acme", "to": "yesterday"], "to"),
            (["app": "acme", "from": "2026-07-01", "to": "2026-06-01"], "from"),
            (["app": "acme", "from": "2025-01-01", "to": "2026-06-01"], "to"),
            (["app": "acme", "format": "xml"], "format"),
            (["app": "acme", "form": "csv"], "form"),
        ]
        for (parameters, name) in cases {
            #expect(throws: ReportError.self) { try ReportQuery.parse(parameters, today: today, defaultFormat: .json) }
            do {
                _ = try ReportQuery.parse(parameters, today: today, defaultFormat: .json)
            } catch {
                guard case .invalidParameter(let parameter, _) = error else {
                    Issue.record("unexpected \(error)")
                    continue
                }
                #expect(parameter == name)
                #expect(error.exitCode == 64 && error.httpStatus == 400)
            }
        }
        let withDate = try ReportQuery.parse(
            ["app": "acme", "date": "x"], today: today, defaultFormat: .json, allowed: ["date"])
        #expect(withDate.app == "acme")
    }

    @Test("days parse strictly and count across months and leap years")
    func days() {
        #expect(ReportDay(iso8601: "2024-02-29")?.adding(days: 1).iso8601 == "2024-03-01")
        #expect(ReportDay(iso8601: "2023-02-29") == nil)
        #expect(ReportDay(iso8601: "2026-6-01") == nil)
        #expect(ReportDay(iso8601: "1970-01-01")?.daysSinceEpoch == 0)
        #expect(day("2026-01-01").days(to: day("2026-12-31")) == 364)
        #expect(ReportDay(year: 1, month: 1, day: 1)?.iso8601 == "0001-01-01")
        #expect(ReportDay(year: 9999, month: 12, day: 31)?.iso8601 == "9999-12-31")
        // Every day from year 1 to 9999 (by a step prime to the calendar's cycles) formats as it parses.
        let first = ReportDay(year: 1, month: 1, day: 1)!.daysSinceEpoch
        let last = ReportDay(year: 9999, month: 12, day: 31)!.daysSinceEpoch
        for number in stride(from: first, through: last, by: 997) {
            let value = ReportDay(daysSinceEpoch: number)
            #expect(ReportDay(iso8601: value.iso8601) == value, "\(value.iso8601)")
        }
    }

    @Test("CSV quotes what needs quoting; JSON keeps decimals exact and revenue as strings")
    func csvAndJSON() {
        var row = LinkDayRow(path: "/a,\"b\"", day: day("2026-06-01"))
        row.clicks = 3
        row.installRate = "0.333333"
        row.revenue = ["USD": "10.10", "EUR": "-0.01"]
        row.events = ["purchase": 2]
        let report = LinkReport(
            app: "acme", from: day("2026-06-01"), to: day("2026-06-01"), watermark: nil, rows: [row], utm: [])
        let csv = ReportRenderer.render(report, as: .csv)
        let lines = csv.split(separator: "\r\n")
        #expect(lines.count == 2)
        #expect(lines[1].hasPrefix("\"/a,\"\"b\"\"\",2026-06-01,3,0,0,0,0.333333,0,"))
        #expect(lines[1].hasSuffix(",purchase=2,,EUR=-0.01 USD=10.10,,,,,,"))  // no platform splits set
        let json = ReportRenderer.render(report, as: .json)
        #expect(
            json.hasPrefix(
                #"{"report":"links","app":"acme","from":"2026-06-01","to":"2026-06-01","watermark":null,"tables":{"links":[{"path":"/a,\"b\"","day":"2026-06-01","clicks":3,"#
            ))
        #expect(json.contains(#""install_rate":0.333333,"#))
        #expect(json.contains(#""revenue":{"EUR":"-0.01","USD":"10.10"}"#))
        #expect(json.contains(#""utm":[]"#))
        let table = ReportRenderer.render(report, as: .table)
        #expect(table.contains("load watermark: none"))
        #expect(table.contains("(no rows)"))  // the empty utm section
    }

    @Test(
        "CSV: a text cell a spreadsheet would run as a formula gets a leading apostrophe; numbers and JSON are unchanged"
    )
    func csvFormulas() {
        var row = LinkDayRow(path: "/promo", day: day("2026-06-01"))
        row.clicks = -1  // not possible, but a number is never prefixed
        row.events = ["@SUM(A1)": 2]
        row.revenue = ["EUR": "-0.01"]
        let utm = [
            UTMRow(
                path: "/promo", day: day("2026-06-01"), source: "=HYPERLINK(\"http://x\",\"y\")", medium: "+1",
                campaign: "-x", clicks: 1, universalLinkOpens: 0, matchedInstalls: 0, attributedInstalls: 0),
            UTMRow(
                path: "/promo", day: day("2026-06-01"), source: "\tsheet", medium: "news", campaign: "a=b", clicks: 1,
                universalLinkOpens: 0, matchedInstalls: 0, attributedInstalls: 0),
        ]
        let report = LinkReport(
            app: "acme", from: day("2026-06-01"), to: day("2026-06-01"), watermark: nil, rows: [row], utm: utm)
        let links = ReportRenderer.render(report, as: .csv).split(separator: "\r\n")
        #expect(links[1].hasPrefix("/promo,2026-06-01,-1,"))
        #expect(links[1].contains(",'@SUM(A1)=2,"))
        #expect(links[1].contains(",EUR=-0.01,"))
        let utmCSV = ReportRenderer.csv(report.tables[1]).split(separator: "\r\n")
        #expect(utmCSV[1].hasPrefix(#"/promo,2026-06-01,"'=HYPERLINK(""http://x"",""y"")",'+1,'-x,1,"#))
        #expect(utmCSV[2].hasPrefix("/promo,2026-06-01,'\tsheet,news,a=b,1,"))
        let json = ReportRenderer.render(report, as: .json)
        #expect(json.contains(#""utm_source":"=HYPERLINK(\"http://x\",\"y\")""#))
        #expect(json.contains(#""events":{"@SUM(A1)":2}"#))
    }

    @Test("CSV doubles every quote, also one followed by a combining mark (one Character with it in Swift)")
    func csvQuoteBeforeCombiningMark() {
        // A UTM value anyone can put in a link's URL: with the quotes undoubled, a spreadsheet read
        // its formula as a cell of its own, without the apostrophe.
        let source = "x\"\u{301},=cmd|' /C calc'!A0,\"\u{301}"
        let utm = [
            UTMRow(
                path: "/p\"\u{301}q", day: day("2026-06-01"), source: source, medium: nil, campaign: nil, clicks: 1,
                universalLinkOpens: 0, matchedInstalls: 0, attributedInstalls: 0)
        ]
        let report = LinkReport(
            app: "acme", from: day("2026-06-01"), to: day("2026-06-01"), watermark: nil, rows: [], utm: utm)
        let csv = Array(ReportRenderer.csv(report.tables[1]).utf8)
        let expected = Array(
            "\r\n\"/p\"\"\u{301}q\",2026-06-01,\"x\"\"\u{301},=cmd|' /C calc'!A0,\"\"\u{301}\",,,1,".utf8)
        #expect(csv.firstRange(of: expected) != nil, "\(String(decoding: csv, as: UTF8.self).debugDescription)")
    }

    @Test("name=value cells can be split back: a name a space or = would cut is written in double quotes")
    func pairNames() {
        let counts = ReportValue.counts(["Sign Up=3 x": 3, "Button Clicked": 1, "purchase": 2, #"a"b\c"#: 4])
        #expect(counts.plainText == #""Button Clicked"=1 "Sign Up=3 x"=3 "a\"b\\c"=4 purchase=2"#)
        #expect(ReportValue.amounts(["USD": "1.50", "eur": "-2"]).plainText == "USD=1.50 eur=-2")
        // In CSV the quotes are doubled like any others, and the formula guard still sees the first byte.
        let table = ReportTable(name: "t", columns: ["events"], rows: [[counts], [.counts(["@SUM(A1)": 1])]])
        let lines = ReportRenderer.csv(table).split(separator: "\r\n")
        #expect(lines[1] == #""""Button Clicked""=1 ""Sign Up=3 x""=3 ""a\""b\\c""=4 purchase=2""#)
        #expect(lines[2] == "'@SUM(A1)=1")
    }

    /// The terminal table goes to an analyst's terminal; names and UTM values are anyone's choice.
    @Test("the terminal table shows control characters as \\u escapes, never sends them to the terminal")
    func tableControlCharacters() {
        var row = LinkDayRow(path: "/promo\u{9b}31m", day: day("2026-06-01"))
        row.events = ["\u{1b}]0;PWNED\u{07}\u{1b}[2Jx\r\n\u{7f}": 2]
        let utm = [
            UTMRow(
                path: "/promo\u{9b}31m", day: day("2026-06-01"), source: "\u{1b}[31mred", medium: "ok é✓",
                campaign: nil, clicks: 1, universalLinkOpens: 0, matchedInstalls: 0, attributedInstalls: 0)
        ]
        let report = LinkReport(
            app: "acme", from: day("2026-06-01"), to: day("2026-06-01"), watermark: nil, rows: [row], utm: utm)
        let text = ReportRenderer.render(report, as: .table)
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" || (0x7F...0x9F).contains($0.value) })
        #expect(text.contains(#""\u001b]0;PWNED\u0007\u001b[2Jx\u000d\u000a\u007f"=2"#))
        #expect(text.contains(#"/promo\u009b31m"#))
        #expect(text.contains(#"\u001b[31mred"#))
        #expect(text.contains("ok é✓"))
        // CSV and JSON are data, not terminal output: they keep every value as it is (JSON escaped).
        #expect(ReportRenderer.render(report, as: .csv).contains("\u{1b}]0;PWNED"))
    }

    @Test("JSON bytes: escapes, integers at their limits, and the API's bytes equal the text form")
    func jsonBytes() throws {
        #expect(ReportJSON.string("a\"b\\c\n\r\t\u{01}\u{1f}é✓") == #""a\"b\\c\n\r\t\u0001\u001fé✓""#)
        #expect(ReportJSON.string("") == #""""#)
        for number in [0, 7, 10, -1, -10, 1_234_567_890, Int.max, Int.min] {
            #expect(ReportJSON.encode(.int(number)) == String(number))
        }
        #expect(ReportJSON.encode(.counts([:])) == "{}")
        #expect(ReportJSON.encode(.counts(["b": 2, "a": -1])) == #"{"a":-1,"b":2}"#)
        #expect(ReportJSON.encode(.amounts(["USD": "1.50"])) == #"{"USD":"1.50"}"#)
        #expect(ReportJSON.encode(.decimal("1e5")) == #""1e5""#)  // not PostgreSQL numeric text: a string
        var row = LinkDayRow(path: "/x\u{7f}\"", day: day("2026-06-01"))
        row.events = ["z": 1, "a\n": 2]
        let report = LinkReport(
            app: "acme", from: day("2026-06-01"), to: day("2026-06-01"), watermark: "w", rows: [row, row],
            utm: [
                UTMRow(
                    path: "/x", day: day("2026-06-01"), source: nil, medium: "m", campaign: "c", clicks: 1,
                    universalLinkOpens: 0, matchedInstalls: 0, attributedInstalls: 0)
            ])
        let bytes = ReportRenderer.bytes(report, as: .json)
        #expect(String(decoding: bytes, as: UTF8.self) == ReportRenderer.render(report, as: .json))
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let tables = try #require(parsed["tables"] as? [String: Any])
        let links = try #require(tables["links"] as? [[String: Any]])
        #expect(links.count == 2 && links[1]["path"] as? String == "/x\u{7f}\"")
        #expect((links[0]["events"] as? [String: Int]) == ["z": 1, "a\n": 2])
        let utm = try #require(tables["utm"] as? [[String: Any]])
        #expect(utm.count == 1 && utm[0]["utm_source"] is NSNull && utm[0]["utm_medium"] as? String == "m")
        #expect(utm[0].count == 10)
    }

    @Test("a report's JSON written in pieces of any size is exactly the whole JSON")
    func streamedJSON() throws {
        let empty = LinkReport(
            app: "acme", from: day("2026-06-01"), to: day("2026-06-30"), watermark: nil, rows: [], utm: [])
        for report in [sampleLinkReport(rows: 600), empty] {
            let whole = ReportRenderer.bytes(report, as: .json)
            #expect(whole.count > (report.rows.isEmpty ? 100 : 100_000))
            for pieceSize in [1, 7, 4096, 64 * 1024, 1 << 20] {
                var stream = ReportJSONStream(report, newline: true)
                var piece = JSONText(capacity: 0)
                var read: [UInt8] = []
                var pieces = 0
                while stream.write(into: &piece, upTo: pieceSize) {
                    read.append(contentsOf: piece.bytes)
                    piece.removeAll()
                    pieces += 1
                }
                #expect(read == whole, "piece size \(pieceSize)")
                #expect(!stream.write(into: &piece, upTo: pieceSize) && piece.count == 0)  // stays at the end
                // Whole rows, at least the size asked for: a piece ends at the first row that reaches it.
                if pieceSize == 4096 && !report.rows.isEmpty { #expect(pieces >= whole.count / 5000) }
            }
            // The API's body: written in pieces (~1 MiB, or many small ones), read out in any sizes;
            // written whole by the first read when nothing else writes it.
            for (readSize, pieceSize) in [(7, 1 << 20), (64 * 1024, 1 << 20), (4096, 1000)] {
                let pieces = ReportJSONPieces(report, pieceSize: pieceSize)
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: readSize, alignment: 1)
                defer { buffer.deallocate() }
                var read: [UInt8] = []
                while case let count = pieces.read(into: buffer), count > 0 {
                    read.append(contentsOf: buffer[..<count])
                }
                #expect(read == whole, "read size \(readSize)")
                #expect(pieces.size == whole.count && pieces.jsonSize == whole.count)
            }
            // Written by another thread while it is read, as the report worker and the event loop
            // do: the reader suspends when nothing is ready and is woken by the next piece.
            for pieceSize in [100, 64 * 1024] {
                let read = Self.readWhileProduced(ReportJSONPieces(report, pieceSize: pieceSize), readSize: 4096)
                #expect(read == whole, "piece size \(pieceSize)")
            }
            // A body whose client went away stops being written at its next piece.
            let cancelled = ReportJSONPieces(report, pieceSize: 100)
            cancelled.cancel()
            cancelled.produce()
            #expect(cancelled.jsonSize < 400 && cancelled.jsonSize < whole.count, "\(cancelled.jsonSize) bytes written")
            // The endpoint's response streams the same bytes, in pieces, or whole.
            var pieces: [[UInt8]] = []
            let response = ReportResponse(
                status: 200, contentType: "application/json", content: .json(ReportJSONStream(report, newline: true)),
                exitCode: 0)
            response.write(pieceSize: 10_000) { pieces.append(Array($0)) }
            #expect(Array(pieces.joined()) == whole)
            #expect(response.bytes == whole)
            if !report.rows.isEmpty { #expect(pieces.count > 5 && pieces.dropLast().allSatisfy { $0.count >= 10_000 }) }
        }
    }

    @Test("a CSV field holding CRLF, CR or LF is quoted (Swift reads \"\\r\\n\" as one character)")
    func csvLineBreaksInFields() {
        for path in ["/a\r\nb", "/a\rb", "/a\nb"] {
            let report = LinkReport(
                app: "acme", from: day("2026-06-01"), to: day("2026-06-01"), watermark: nil,
                rows: [LinkDayRow(path: path, day: day("2026-06-01"))], utm: [])
            let csv = ReportRenderer.render(report, as: .csv)
            #expect(csv.contains("\r\n\"" + path + "\",2026-06-01,"), "\(csv.debugDescription)")
        }
    }
}

extension RenderingTests {
    /// Everything `body` hands out while another thread makes it (`produce`), read as the server's
    /// event loop does: a read that finds nothing ready has suspended and waits to be woken. Bounded:
    /// a wake that never comes fails the test after 10 s per wait.
    static func readWhileProduced(_ body: ReportJSONPieces, readSize: Int) -> [UInt8] {
        let woken = DispatchSemaphore(value: 0)
        let producer = Thread { body.produce() }
        producer.start()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: readSize, alignment: 1)
        defer { buffer.deallocate() }
        var read: [UInt8] = []
        var suspended = false
        while true {
            let count = body.read(into: buffer, suspend: { suspended = true }, wake: { woken.signal() })
            if count == 0 { break }
            if count < 0 {
                #expect(suspended)
                suspended = false
                guard woken.wait(timeout: .now() + 10) == .success else {
                    Issue.record("a suspended read was never woken")
                    break
                }
                continue
            }
            read.append(contentsOf: buffer[..<count])
        }
        return read
    }
}
