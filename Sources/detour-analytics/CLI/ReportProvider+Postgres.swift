import Dispatch
import Foundation
import Ingest
import JSONText
import Observability
import Postgres
import Reports

/// The report API's production provider: `Reports` over `PostgresReportProvider`'s connection pool.
/// Ingest does not depend on `Reports`; this is the one place they meet.
extension PostgresReportProvider {
    /// A provider that answers `GET /api/reports/<kind>` from the report views at `databaseURL`,
    /// with up to `poolSize` connections (one per report worker).
    static func reports(databaseURL: String, poolSize: Int) -> PostgresReportProvider {
        var configuration = Configuration()
        configuration.poolSize = poolSize
        return PostgresReportProvider(url: databaseURL, configuration: configuration) { connection, request in
            reportAnswer(connection: connection, request: request)
        }
    }

    /// Runs one report as the API asks (JSON by default, CSV on `format=csv`; `table` is refused,
    /// it is the terminal's format). Refusals keep `ReportError`'s status and code; the body is
    /// ingest's error shape, so every answer of the API has one error format.
    /// `today`: the default `to`; nil for today in the app's time zone.
    static func reportAnswer(connection: Connection, request: ReportRequest, today: ReportDay? = nil) -> ReportAnswer {
        do throws(ReportError) {
            guard let kind = ReportKind(rawValue: request.kind) else {
                throw .invalidParameter(name: "report", message: "expected links, funnel, retention or attribution")
            }
            // Checked before the shared parser, whose message would offer `table` too.
            if let format = request.parameters["format"], !["json", "csv"].contains(format.lowercased()) {
                throw .invalidParameter(name: "format", message: "expected json or csv, got \(format.prefix(40))")
            }
            let service = ReportService(connection: connection)
            let query = try service.query(request.parameters, today: today, defaultFormat: .json)
            let report = try service.report(kind, app: query.app, from: query.from, to: query.to)
            let contentType = ReportEndpoint.contentType(query.format)
            guard query.format == .json else {
                return .report(contentType: contentType, body: ReportRenderer.bytes(report, as: query.format))
            }
            // Written here, off the event loop, in pieces that are freed as they are sent (a 30-day
            // per-link report at 1,000 links is ~54 MB of JSON: as one buffer, it was held twice).
            return .streamed(contentType: contentType, body: ReportBodyStream(ReportJSONStream(report, newline: true)))
        } catch {
            guard case .database(let detail) = error else {
                return .failure(status: error.httpStatus, code: error.code, message: error.description)
            }
            // PostgreSQL's own text (relation names, a timeout's SQL state, the server's wording) is for
            // the operator's log; the API client gets the code and a message that names no internals.
            apiLogger.error("reports.query_failed", ["report": request.kind, "error": detail])
            return .failure(status: error.httpStatus, code: error.code, message: databaseFailureMessage)
        }
    }

    /// What the API answers when PostgreSQL fails a report (the cause goes to the server's log).
    static let databaseFailureMessage =
        "the report query failed in the database; retry later (the server's log has the cause)"
}

/// A report's JSON as the HTTP server reads it: written on the report worker that made the report,
/// in 1 MiB pieces, then handed out piece by piece as the connection's event loop asks, each piece
/// freed once sent. Writing it on the event loop as it was asked for (the first byte at once) cost
/// ingest requests on that loop: with two clients reading the 54 MB per-link report, single events'
/// p99.9 was 68-75 ms against 34-36 ms (docs/ingest.md, "Report API").
/// `@unchecked Sendable`: made on a report worker, then read by one connection's event loop only,
/// one call at a time (the server hands the answer over through the connection's resume).
final class ReportBodyStream: HTTPBodyStream, @unchecked Sendable {
    private var pieces: [[UInt8]] = []
    private var piece = 0
    private var offset = 0
    private let size: Int

    /// Writes the whole JSON now, then lets the report's rows go.
    init(_ json: ReportJSONStream) {
        var json = json
        var out = JSONText(capacity: Self.pieceSize + Self.pieceSize / 4)
        while json.write(into: &out, upTo: Self.pieceSize) {
            pieces.append(out.bytes)
            out.removeAll()
        }
        size = pieces.reduce(0) { $0 + $1.count }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while piece < pieces.count && offset == pieces[piece].count {
            pieces[piece] = []  // sent: freed
            piece += 1
            offset = 0
        }
        guard piece < pieces.count else { return 0 }
        let count = min(buffer.count, pieces[piece].count - offset)
        pieces[piece].withUnsafeBytes { bytes in
            buffer.baseAddress!.copyMemory(from: bytes.baseAddress! + offset, byteCount: count)
        }
        offset += count
        return count
    }

    deinit {
        // The report's rows and pieces were freed into the heap of the worker that made them; glibc
        // keeps freed memory for reuse, so each report worker's heap would stay at its largest report
        // (~4 x 100 MB with four workers). Given back off the event loop.
        pieces = []
        if size >= Self.largeReportBytes { DispatchQueue.global(qos: .utility).async { Heap.returnFreeMemory() } }
    }

    /// How much JSON each piece holds (at least; whole rows).
    static let pieceSize = 1 << 20
    /// A report this large gives its memory back when it is sent.
    static let largeReportBytes = 16 << 20
}

private let apiLogger = Logger(label: "ingest")
