/// One report request as the HTTP API received it, authenticated and with its app settled.
package struct ReportRequest: Sendable, Equatable {
    /// `links`, `funnel`, `retention` or `attribution` (the last path segment).
    package var kind: String
    /// The app the secret key belongs to (`X-App-ID`).
    package var appID: String
    /// The query parameters, decoded, with `app` set to `appID` (`from`, `to`, `format`, and any
    /// other name the client sent, so the report side can refuse a typo).
    package var parameters: [String: String]
    /// The client's `Accept-Encoding` header as sent, nil without one: the provider may compress
    /// its answer with a coding it names (`ReportAnswer`'s `contentEncoding`).
    package var acceptEncoding: String?
    /// A `HEAD` request: its answer is read whole before it is sent, so a body made while it is
    /// sent (`HTTPProducedBody`) is made first.
    package var isHead: Bool

    /// Makes a request.
    package init(
        kind: String, appID: String, parameters: [String: String], acceptEncoding: String? = nil,
        isHead: Bool = false
    ) {
        self.kind = kind
        self.appID = appID
        self.parameters = parameters
        self.acceptEncoding = acceptEncoding
        self.isHead = isHead
    }
}

/// What a report provider answers.
package enum ReportAnswer: Sendable, Equatable {
    /// The rendered report (200); `contentEncoding` names the coding `body` is compressed with
    /// (`Content-Encoding`), nil for none; `watermark`, the load watermark it was computed at, is
    /// sent as `X-Detour-Watermark` (a CSV body has no place for it).
    case report(contentType: String, body: [UInt8], contentEncoding: String? = nil, watermark: String? = nil)
    /// The report (200), its body handed out while it is sent (a large report's JSON), compressed
    /// with `contentEncoding` when not nil.
    case streamed(
        contentType: String, body: any HTTPBodyStream, contentEncoding: String? = nil, watermark: String? = nil)
    /// A refusal with its HTTP status, stable machine code and a message safe to show the client
    /// (`invalid_parameter` 400, `unknown_app` 404, `rollups_pending` 409, `database_unavailable` 503).
    case failure(status: Int, code: String, message: String)

    /// Equal answers: the same bytes, the same stream object, or the same refusal.
    package static func == (left: ReportAnswer, right: ReportAnswer) -> Bool {
        switch (left, right) {
        case (
            .report(let leftType, let leftBody, let leftCoding, let leftMark),
            .report(let rightType, let rightBody, let rightCoding, let rightMark)
        ):
            return leftType == rightType && leftBody == rightBody && leftCoding == rightCoding && leftMark == rightMark
        case (
            .streamed(let leftType, let leftBody, let leftCoding, let leftMark),
            .streamed(let rightType, let rightBody, let rightCoding, let rightMark)
        ):
            return leftType == rightType && leftBody === rightBody && leftCoding == rightCoding && leftMark == rightMark
        case (.failure(let status, let code, let message), .failure(let otherStatus, let otherCode, let otherMessage)):
            return status == otherStatus && code == otherCode && message == otherMessage
        default:
            return false
        }
    }
}

/// Produces reports for the read-only report API. Ingest knows nothing about reports beyond this:
/// the executable plugs in a provider backed by `Reports` and PostgreSQL.
///
/// Concurrency: `respond` blocks (it runs SQL); the server calls it on its report worker threads,
/// never on a libmicrohttpd event loop, at most `IngestConfiguration.reportThreads` at once.
package protocol ReportProvider: Sendable {
    /// Runs and renders one report. Must not throw: every failure is a `.failure` answer.
    func respond(to request: ReportRequest) -> ReportAnswer
}
