import Foundation
import Ingest
import Reports
import TestSupport
import Testing

/// The report API's compressed answers: which coding an `Accept-Encoding` header gets, and that what
/// `Reports` compresses, ingest's own request-body decoder (another code path over the same
/// libraries, with its size limit) gives back byte for byte.
@Suite struct ReportEncodingTests {
    @Test(
        "Accept-Encoding: the highest q of zstd and gzip, zstd on a tie, * for any coding not named, q=0 refuses",
        arguments: [
            (nil, nil), ("", nil), ("identity", nil), ("br, deflate", nil), ("gzip", .gzip), ("x-gzip", .gzip),
            ("zstd", .zstd), ("gzip, zstd", .zstd), ("deflate, gzip, br, zstd", .zstd), (" GZIP ; Q=0.8 ", .gzip),
            ("gzip;q=1, zstd;q=0.5", .gzip), ("gzip;q=0.5, zstd;q=0.5", .zstd), ("zstd;q=0", nil),
            ("zstd;q=0, gzip", .gzip), ("*", .zstd), ("*;q=0", nil), ("gzip;q=0, *", .zstd),
            ("zstd;q=0, *;q=0.5", .gzip), ("gzip;q=abc", nil), ("gzip;q=2", nil), (",, ;q=1,", nil),
            ("gzip;level=9", .gzip), ("zstd;q=0.001, gzip;q=0.002", .gzip),
        ] as [(String?, ReportEncoding?)])
    func negotiate(header: String?, expected: ReportEncoding?) {
        #expect(ReportEncoding.negotiate(header) == expected, "\(header ?? "no header")")
    }

    /// A per-link report of `rows` link-days over 97 links, with events, revenue and null rates.
    static func report(rows: Int) throws -> LinkReport {
        let first = try #require(ReportDay(year: 2026, month: 6, day: 1))
        var links: [LinkDayRow] = []
        for index in 0..<rows {
            var row = LinkDayRow(path: "/l/\(index % 97)", day: first.adding(days: index % 30))
            row.clicks = index * 7 % 1000
            row.matchedInstalls = index % 13
            row.installRate = index % 3 == 0 ? nil : "0.\(100_000 + index % 899_999)"
            row.events = ["sign_up": index % 5, "purchase": index % 3, "level_up": index % 11]
            row.revenue = ["USD": "\(index % 400).99"]
            links.append(row)
        }
        return LinkReport(app: "app", from: first, to: first.adding(days: 29), watermark: nil, rows: links, utm: [])
    }

    /// Everything `body` hands out, read in calls of `chunk` bytes as the server does.
    static func readAll(_ body: ReportJSONPieces, chunk: Int = 4096) -> [UInt8] {
        drain(readSize: chunk) { body.read(into: $0) }
    }

    @Test(
        "a report's JSON compressed piece by piece decodes to the same JSON, whatever the piece size",
        arguments: [ReportEncoding.zstd, .gzip])
    func compressedPieces(encoding: ReportEncoding) throws {
        let coding: ContentEncoding = encoding == .zstd ? .zstd : .gzip
        for rows in [0, 1, 20_000] {
            let report = try Self.report(rows: rows)
            let plain = Self.readAll(ReportJSONPieces(report))
            #expect(plain.count > 100 && plain.last == UInt8(ascii: "\n"))
            #expect(plain == ReportJSON.bytes(report) + [UInt8(ascii: "\n")])
            // Written by two threads (a report of four pieces or more) and by one: the same JSON.
            for (pieceSize, writers) in [(1, 2), (100, 2), (100, 1), (64 * 1024, 2), (64 * 1024, 1), (1 << 20, 2)] {
                let body = ReportJSONPieces(report, pieceSize: pieceSize, encoding: encoding, writers: writers)
                let compressed = Self.readAll(body)
                #expect(body.jsonSize == plain.count && body.size == compressed.count)
                let decoded = try Decompressor.decode(compressed, encoding: coding, limit: plain.count)
                #expect(decoded == plain, "\(encoding) \(rows) rows in pieces of \(pieceSize), \(writers) writers")
                if rows == 20_000 {
                    // What the coding is for: the JSON repeats its keys on every row.
                    #expect(compressed.count * 5 < plain.count, "\(compressed.count) of \(plain.count) bytes")
                }
            }
        }
        for bytes in [[], Array("path,day\r\n".utf8), plainCSV()] {
            let decoded = try Decompressor.decode(encoding.compress(bytes), encoding: coding, limit: bytes.count)
            #expect(decoded == bytes)
        }
    }

    /// A CSV body of some size, as the API renders it.
    private func plainCSV() -> [UInt8] {
        (try? ReportRenderer.bytes(Self.report(rows: 2_000), as: .csv)) ?? []
    }
}
