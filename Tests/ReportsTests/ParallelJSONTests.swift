import Foundation
import JSONText
import Reports
import Testing

/// A large report's JSON written on two threads (`ReportJSONChunks`, through `ReportJSONPieces`) is
/// the JSON one thread writes, byte for byte, however the rows fall into chunks.
@Suite struct ParallelJSONTests {
    /// A report of any tables (every report kind's JSON is its header and its tables).
    struct Tables: RenderableReport {
        var kind = "links"
        var app = "acme"
        var from = day("2026-06-01")
        var to = day("2026-06-30")
        var watermark: String? = "2026-07-01T00:00:00Z"
        var path: String? = nil
        var tables: [ReportTable]
    }

    /// A table of `count` rows of three columns (text with escapes, a count, counts by name).
    static func table(_ name: String, count: Int) -> ReportTable {
        ReportTable(name: name, columns: ["path", "clicks", "events"], count: count) { index, out in
            out.text("/l/\(index % 37)\"\\é")
            out.int(index)
            out.counts(["purchase": index, "sign_up": index % 3])
        }
    }

    /// The per-link report of `RenderingTests.streamedJSON` (`count` link-days with UTM rows).
    static func linkReport(rows count: Int) -> LinkReport { sampleLinkReport(rows: count) }

    static let reports: [(String, any RenderableReport)] = [
        ("no tables", Tables(tables: [])),
        ("zero rows", Tables(tables: [table("a", count: 0)])),
        ("one row", Tables(tables: [table("a", count: 1)])),
        ("two rows", Tables(tables: [table("a", count: 2)])),
        ("empty tables around rows", Tables(tables: ["a", "b", "c"].map { table($0, count: $0 == "b" ? 3 : 0) })),
        ("many tables", Tables(tables: (0..<9).map { table("t\($0)", count: $0 * $0) })),
        ("a large table then a small one", Tables(tables: [table("a", count: 2_000), table("b", count: 5)])),
        ("per-link, 600 rows", linkReport(rows: 600)),
        ("per-link, empty", linkReport(rows: 0)),
    ]

    @Test("two writers write the bytes one writer writes, for every piece size, the smallest reports included")
    func sameBytes() {
        for (name, report) in Self.reports {
            let whole = ReportJSON.bytes(report) + [UInt8(ascii: "\n")]
            for pieceSize in [1, 7, 100, 4096, 64 * 1024, 1 << 20] {
                let serial = readBody(ReportJSONPieces(report, pieceSize: pieceSize, writers: 1))
                let parallel = ReportJSONPieces(report, pieceSize: pieceSize, writers: 2)
                #expect(readBody(parallel) == whole, "\(name), pieces of \(pieceSize)")
                #expect(serial == whole, "\(name), pieces of \(pieceSize), one writer")
                #expect(parallel.jsonSize == whole.count && parallel.size == whole.count, "\(name)")
                // Read while another thread makes it, as the server does.
                let concurrent = RenderingTests.readWhileProduced(
                    ReportJSONPieces(report, pieceSize: pieceSize), readSize: 1000)
                #expect(concurrent == whole, "\(name), pieces of \(pieceSize), read while written")
            }
        }
    }

    @Test("the chunks are the whole text in order, each of whole rows, and at most the window is written ahead")
    func chunksInOrder() {
        let report = Self.linkReport(rows: 600)
        let whole = ReportJSON.bytes(report)
        #expect(ReportJSONChunks.isWorthSplitting(ReportJSONStream(report), size: 4096))
        #expect(!ReportJSONChunks.isWorthSplitting(ReportJSONStream(report), size: 1 << 20))
        for (size, window) in [(1, 2), (1000, 2), (4096, 4), (50_000, 3), (10_000_000, 4)] {
            var joined: [UInt8] = []
            var chunks = 0
            var most = 0
            ReportJSONChunks.forEachChunk(
                of: ReportJSONStream(report), size: size, window: window, ahead: { most = max(most, $0) }
            ) { chunk in
                joined += chunk.bytes
                chunks += 1
                // A slow reader: the helper runs ahead, as far as the window lets it.
                if chunks < 4 { usleep(2000) }
                return true
            }
            #expect(joined == whole, "chunks of \(size)")
            #expect(most >= 1 && most <= window, "\(most) chunks ahead with a window of \(window)")
            // Whole rows: a chunk of a 1-byte size is one row (or a table's `]` and the next's `"name":[`).
            if size == 1 { #expect(chunks >= 1200) }
            if size == 10_000_000 { #expect(chunks == 1) }
        }
    }

    @Test("a body that stops (the client left) stops both writers; a cancelled body writes at most a few chunks")
    func stops() {
        let report = Self.linkReport(rows: 600)
        let whole = ReportJSON.bytes(report)
        var handed: [UInt8] = []
        var chunks = 0
        ReportJSONChunks.forEachChunk(of: ReportJSONStream(report), size: 1000) { chunk in
            handed += chunk.bytes
            chunks += 1
            return chunks < 3
        }
        #expect(chunks == 3 && handed == Array(whole.prefix(handed.count)))
        let cancelled = ReportJSONPieces(report, pieceSize: 1000)
        cancelled.cancel()
        cancelled.produce()
        #expect(cancelled.jsonSize < 2500, "\(cancelled.jsonSize) bytes written")
        // Compressed, writing stops at the first compressed piece handed out (the coder keeps up to a
        // block of input before it emits any).
        let large = Self.linkReport(rows: 3_000)
        let largeJSON = ReportJSON.bytes(large)
        for encoding in [ReportEncoding.zstd, .gzip] {
            let body = ReportJSONPieces(large, pieceSize: 1000, encoding: encoding)
            body.cancel()
            body.produce()
            #expect(body.jsonSize < largeJSON.count / 2, "\(encoding): \(body.jsonSize) of \(largeJSON.count) bytes")
        }
    }
}
