import Foundation
import Ingest
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
            // In one snapshot, as the CLI's (`ReportService.served`): until 2026-12-05 the API read in
            // several statements, and a rollup pass committing in between could pair an old
            // watermark with new counts, or new per-link rows with old app-wide installs.
            let (query, report) = try service.served(kind, request.parameters, today: today, defaultFormat: .json)
            let contentType = ReportEndpoint.contentType(query.format)
            // Compressed when the client accepts zstd or gzip (here too, on the report worker).
            let encoding = ReportEncoding.negotiate(request.acceptEncoding)
            guard query.format == .json else {
                // The report's rows are freed when this returns (a JSON body gives memory back as it ends).
                defer { Heap.returnFreeMemorySoon() }
                let body = ReportRenderer.bytes(report, as: query.format)
                guard let encoding, body.count >= minimumCompressedBytes else {
                    return .report(contentType: contentType, body: body, watermark: report.watermark)
                }
                return .report(
                    contentType: contentType, body: encoding.compress(body), contentEncoding: encoding.name,
                    watermark: report.watermark)
            }
            // Written here, off the event loop, in pieces that are freed as they are sent (a 30-day
            // per-link report at 1,000 links is ~54 MB of JSON: as one buffer, it was held twice;
            // compressed with zstd, ~3 MB).
            return .streamed(
                contentType: contentType, body: ReportJSONPieces(report, encoding: encoding),
                contentEncoding: encoding?.name, watermark: report.watermark)
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

    /// A CSV answer shorter than this is sent as it is, even to a client that accepts compression
    /// (the coding's header and the work would be worth more than the bytes saved). A JSON answer is
    /// compressed whenever accepted: it is written in pieces, its length unknown until the end.
    static let minimumCompressedBytes = 1024

    /// What the API answers when PostgreSQL fails a report (the cause goes to the server's log).
    static let databaseFailureMessage =
        "the report query failed in the database; retry later (the server's log has the cause)"
}

/// The report API sends a report's JSON pieces as its streamed body, made on the report worker as it is sent.
extension ReportJSONPieces: HTTPProducedBody {}

private let apiLogger = Logger(label: "ingest")
