/// One report request as the HTTP API received it, authenticated and with its app settled.
package struct ReportRequest: Sendable, Equatable {
    /// `links`, `funnel`, `retention` or `attribution` (the last path segment).
    package var kind: String
    /// The app the secret key belongs to (`X-App-ID`).
    package var appID: String
    /// The query parameters, decoded, with `app` set to `appID` (`from`, `to`, `format`, and any
    /// other name the client sent, so the report side can refuse a typo).
    package var parameters: [String: String]

    /// Makes a request.
    package init(kind: String, appID: String, parameters: [String: String]) {
        self.kind = kind
        self.appID = appID
        self.parameters = parameters
    }
}

/// What a report provider answers.
package enum ReportAnswer: Sendable, Equatable {
    /// The rendered report (200).
    case report(contentType: String, body: [UInt8])
    /// The report (200), its body handed out while it is sent (a large report's JSON).
    case streamed(contentType: String, body: any HTTPBodyStream)
    /// A refusal with its HTTP status, stable machine code and a message safe to show the client
    /// (`invalid_parameter` 400, `unknown_app` 404, `rollups_pending` 409, `database_unavailable` 503).
    case failure(status: Int, code: String, message: String)

    /// Equal answers: the same bytes, the same stream object, or the same refusal.
    package static func == (left: ReportAnswer, right: ReportAnswer) -> Bool {
        switch (left, right) {
        case (.report(let leftType, let leftBody), .report(let rightType, let rightBody)):
            return leftType == rightType && leftBody == rightBody
        case (.streamed(let leftType, let leftBody), .streamed(let rightType, let rightBody)):
            return leftType == rightType && leftBody === rightBody
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
