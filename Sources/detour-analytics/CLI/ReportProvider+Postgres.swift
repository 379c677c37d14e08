import Foundation
import Ingest
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
            reportAnswer(connection: connection, request: request, today: ReportCommand.today())
        }
    }

    /// Runs one report as the API asks (JSON by default, CSV on `format=csv`; `table` is refused,
    /// it is the terminal's format). Refusals keep `ReportError`'s status and code; the body is
    /// ingest's error shape, so every answer of the API has one error format.
    static func reportAnswer(connection: Connection, request: ReportRequest, today: ReportDay) -> ReportAnswer {
        do throws(ReportError) {
            guard let kind = ReportKind(rawValue: request.kind) else {
                throw .invalidParameter(name: "report", message: "expected links, funnel, retention or attribution")
            }
            let query = try ReportQuery.parse(request.parameters, today: today, defaultFormat: .json)
            guard query.format != .table else {
                throw .invalidParameter(name: "format", message: "expected json or csv")
            }
            let report = try ReportService(connection: connection).report(
                kind, app: query.app, from: query.from, to: query.to)
            return .report(
                contentType: ReportEndpoint.contentType(query.format),
                body: Array(ReportRenderer.render(report, as: query.format).utf8))
        } catch {
            return .failure(status: error.httpStatus, code: error.code, message: error.description)
        }
    }
}
