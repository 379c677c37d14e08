import JSONText
package import Postgres

/// A rendered answer to a report request: what the HTTP API sends and what the CLI prints.
package struct ReportResponse: Sendable, Equatable {
    /// What the body is made of.
    package enum Content: Sendable {
        /// Bytes, as sent.
        case bytes([UInt8])
        /// A report's JSON, written as it is read (`write(pieceSize:to:)`).
        case json(ReportJSONStream)
    }

    /// HTTP status (200, or `ReportError.httpStatus`).
    package var status: Int
    /// `application/json`, `text/csv; charset=utf-8` or `text/plain; charset=utf-8`.
    package var contentType: String
    /// The body.
    package var content: Content
    /// The CLI's exit status (0, or `ReportError.exitCode`).
    package var exitCode: Int32
    /// The load watermark of a report answer (nil for a refusal, or before any load): the CLI states
    /// it on standard error beside a CSV, whose rows have no place for it.
    package var watermark: String? = nil
    /// Why the report was refused (nil for a report): the CLI says it in its own words, where the
    /// body is the API's (JSON for `format=json`).
    package var error: ReportError? = nil

    /// A response with a body of bytes.
    package init(status: Int, contentType: String, bytes: [UInt8], exitCode: Int32) {
        self.init(status: status, contentType: contentType, content: .bytes(bytes), exitCode: exitCode)
    }

    /// A response.
    package init(status: Int, contentType: String, content: Content, exitCode: Int32) {
        self.status = status
        self.contentType = contentType
        self.content = content
        self.exitCode = exitCode
    }

    /// The whole body (a streamed one written out in one buffer).
    package var bytes: [UInt8] {
        switch content {
        case .bytes(let bytes): return bytes
        case .json(var stream):
            var out = JSONText(capacity: stream.estimatedSize)
            stream.write(into: &out, upTo: .max)
            return out.takeBytes()
        }
    }

    /// The body as text.
    package var body: String { String(decoding: bytes, as: UTF8.self) }

    /// Hands the body to `sink` in pieces of about `pieceSize` bytes (a streamed JSON body is
    /// written into one reused buffer of that size, never whole); stops at the first error `sink` throws.
    package func write(pieceSize: Int = 1 << 20, to sink: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        switch content {
        case .bytes(let bytes):
            try bytes.withUnsafeBytes { try sink($0) }
        case .json(var stream):
            try stream.forEachPiece(of: pieceSize) { piece in try piece.withUnsafeBytes { try sink($0) } }
        }
    }

    package static func == (left: ReportResponse, right: ReportResponse) -> Bool {
        left.status == right.status && left.contentType == right.contentType && left.exitCode == right.exitCode
            && left.bytes == right.bytes
    }
}

/// The one-liners behind `detour-analytics report links|funnel|retention|attribution` and
/// `GET /api/reports/<kind>`: parse the parameters, run the report, render it, map errors.
package enum ReportEndpoint {
    /// Runs report `kind` (`links`, `funnel`, `retention`, `attribution`) with `parameters` (`app`,
    /// `from`, `to`, `format`) and renders it. Never throws: failures become an error response
    /// (JSON `{"error": code, "message": ...}` for the API's json format, the message otherwise).
    ///
    /// - Parameters:
    ///   - kind: the path segment or subcommand.
    ///   - parameters: query parameters or flags (without `--`).
    ///   - connection: a connection that can read the report views.
    ///   - today: the default `to`; nil (the default) for today in the app's time zone.
    ///   - defaultFormat: `.json` for the API, `.table` for the CLI.
    package static func respond(
        kind: String, parameters: [String: String], connection: Connection, today: ReportDay? = nil,
        defaultFormat: ReportFormat
    ) -> ReportResponse {
        let format = parameters["format"].flatMap { ReportFormat(rawValue: $0.lowercased()) } ?? defaultFormat
        do throws(ReportError) {
            guard let reportKind = ReportKind(rawValue: kind) else {
                throw .invalidParameter(name: "report", message: "expected links, funnel, retention or attribution")
            }
            let service = ReportService(connection: connection)
            let (query, report) = try service.served(
                reportKind, parameters, today: today, defaultFormat: defaultFormat)
            // JSON, the API's and scripts' format, is written as it is read; CSV and the
            // terminal table are rendered whole.
            let content: ReportResponse.Content =
                query.format == .json
                ? .json(ReportJSONStream(report, newline: true))
                : .bytes(ReportRenderer.bytes(report, as: query.format))
            var response = ReportResponse(
                status: 200, contentType: contentType(query.format), content: content, exitCode: 0)
            response.watermark = report.watermark
            return response
        } catch {
            return failure(error, format: format)
        }
    }

    /// The response for an error in `format`.
    package static func failure(_ error: ReportError, format: ReportFormat) -> ReportResponse {
        let body: String
        switch format {
        case .json:
            body =
                "{\"error\":" + ReportJSON.string(error.code) + ",\"message\":" + ReportJSON.string(error.description)
                + "}\n"
        case .csv, .table:
            body = error.description + "\n"
        }
        var response = ReportResponse(
            status: error.httpStatus, contentType: format == .json ? contentType(.json) : contentType(.table),
            bytes: Array(body.utf8),
            exitCode: error.exitCode)
        response.error = error
        return response
    }

    /// The content type of a format.
    package static func contentType(_ format: ReportFormat) -> String {
        switch format {
        case .json: return "application/json"
        case .csv: return "text/csv; charset=utf-8"
        case .table: return "text/plain; charset=utf-8"
        }
    }
}
