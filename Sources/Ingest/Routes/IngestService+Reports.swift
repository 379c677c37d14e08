/// The read-only report API: `GET /api/reports/{links,funnel,retention,attribution}`.
///
/// Order of checks (all on the event loop, from the head): shutting down → key and app (secret
/// key of `X-App-ID` only) → rate limit → query string (count, length, repeats, `app` = `X-App-ID`)
/// → declared body size → provider configured. The report itself (blocking SQL) runs on a report
/// worker; the connection is suspended meanwhile, and a full report queue is answered 503
/// `reports_busy` at once.
extension IngestService {
    /// A report request carries no body; up to this many bytes of one are read and ignored, more is
    /// 413 `body_too_large`.
    static let reportBodyLimit = 4096

    /// Authenticates a report request and reads its query string.
    func admitReport(_ head: RequestHead, route: Route) throws(IngestError) -> ReportRequest {
        if isShuttingDown.load(ordering: .relaxed) { throw .shuttingDown }
        let (appID, kind) = try authenticate(head)
        guard kind == .secret else {
            throw .keyNotAllowed(reason: "reports take the app's secret key, not a publishable key")
        }
        if let limiter = rateLimiter, let retryAfter = limiter.acquire(app: appID, kind: kind) {
            throw .rateLimited(retryAfter: retryAfter)
        }
        var parameters = try Self.reportParameters(
            head.arguments(configuration.maxQueryArguments), limit: configuration.maxQueryArguments,
            maxBytes: configuration.maxQueryArgumentBytes)
        if let app = parameters["app"], app != appID {
            throw .keyNotAllowed(reason: "the app parameter must equal X-App-ID; a key reads only its own app")
        }
        parameters["app"] = appID
        // A declared body over the limit is refused from the head, as on the ingest routes.
        if let length = head.contentLength, length > Self.reportBodyLimit {
            throw .bodyTooLarge(limit: Self.reportBodyLimit)
        }
        guard reports != nil else { throw .reportsUnavailable }
        return ReportRequest(
            kind: String(route.path.dropFirst(Router.reportPathPrefix.count)), appID: appID, parameters: parameters,
            acceptEncoding: head.header(.acceptEncoding), isHead: head.method == "HEAD")
    }

    /// The query arguments as a dictionary: at most `limit` of them, names and values at most
    /// `maxBytes` each and UTF-8, no name twice (a repeated `from` is ambiguous, so it is refused).
    static func reportParameters(
        _ read: Result<[(name: String, value: String)], QueryArgumentProblem>, limit: Int, maxBytes: Int
    ) throws(IngestError) -> [String: String] {
        let arguments: [(name: String, value: String)]
        switch read {
        case .success(let pairs): arguments = pairs
        case .failure(.tooMany):
            throw .invalidParameter(name: "query", message: "more than \(limit) query parameters")
        case .failure(.notUTF8(let name)):
            throw .invalidParameter(
                name: name.isEmpty ? "query" : String(name.prefix(64)),
                message: "is not UTF-8 once percent-decoded (a %XX byte outside a UTF-8 sequence)")
        }
        var parameters: [String: String] = [:]
        for (name, value) in arguments {
            let shownName = String(name.prefix(64))
            guard !name.isEmpty else { throw .invalidParameter(name: "query", message: "a parameter has no name") }
            guard name.utf8.count <= maxBytes, value.utf8.count <= maxBytes else {
                throw .invalidParameter(name: shownName, message: "longer than \(maxBytes) bytes")
            }
            // A %00 names nothing a report can mean (PostgreSQL's text cannot even hold it).
            guard !name.utf8.contains(0), !value.utf8.contains(0) else {
                throw .invalidParameter(name: shownName, message: "contains a NUL byte (%00)")
            }
            guard parameters.updateValue(value, forKey: name) == nil else {
                throw .invalidParameter(name: shownName, message: "given more than once")
            }
        }
        return parameters
    }

    /// Queues the report on a worker; the answer resumes the suspended connection.
    func runReport(_ request: ReportRequest) -> RequestFinish {
        guard let reports else { return .respond(HTTPResponse(error: .reportsUnavailable)) }
        return .later { complete in
            let job = ReportQueue.Job(request: request) { answer in
                guard let answer else { return complete(HTTPResponse(error: .shuttingDown)) }
                complete(Self.response(for: answer))
            }
            if !reports.enqueue(job) { complete(HTTPResponse(error: .reportsBusy(retryAfter: 1))) }
        }
    }

    /// The HTTP answer for a provider's answer; refusals use the same error body as ingest. A report
    /// says `Vary: Accept-Encoding` whether compressed or not: its coding follows that header; and
    /// `X-Detour-Watermark` when it has a watermark (every format: CSV has nowhere else to state it).
    static func response(for answer: ReportAnswer) -> HTTPResponse {
        func headers(_ contentEncoding: String?, _ watermark: String?) -> [(String, String)] {
            [("Cache-Control", "no-store"), ("Vary", "Accept-Encoding")]
                + (contentEncoding.map { [("Content-Encoding", $0)] } ?? [])
                + (watermark.map { [("X-Detour-Watermark", $0)] } ?? [])
        }
        switch answer {
        case .report(let contentType, let body, let contentEncoding, let watermark):
            return HTTPResponse(
                status: 200, body: body, contentType: contentType, headers: headers(contentEncoding, watermark))
        case .streamed(let contentType, let body, let contentEncoding, let watermark):
            return HTTPResponse(
                status: 200, stream: body, contentType: contentType, headers: headers(contentEncoding, watermark))
        case .failure(let status, let code, let message):
            return HTTPResponse(error: .report(status: status, code: code, message: message))
        }
    }
}
