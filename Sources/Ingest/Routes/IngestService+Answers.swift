import EventModel
import JSONText

extension IngestService {
    /// Refuses a whole request whose body was read: dead-letters the body (bounded by the size
    /// limits), counts it, and answers with the error once the dead letter is written. `encoding` is
    /// that of `raw`: the request's when it is kept as received, else identity.
    /// The dead letter is charged to the budget until it is written, as a read request's lines are
    /// (`body`: the body as received, charged already; `decoded`: its size decoded): until
    /// 2026-12-02 it was not, and a gzip body of a few KB decoding to 10 MiB of refused JSON held
    /// 10 MiB in the commit queue outside `--max-buffered-bodies`. Over the budget, 503 `overloaded`.
    func refuse(
        _ error: IngestError, info: RequestInfo, raw: [UInt8], rawIsJSON: Bool, encoding: ContentEncoding,
        body: Int, decoded: Int
    ) -> RequestFinish {
        let answer = error.answer
        let record = DeadLetter.record(
            receivedAt: info.receivedAt, app: info.appID, route: info.route.name, index: nil, code: answer.code,
            message: answer.message, raw: raw[...], rawIsJSON: rawIsJSON, encoding: encoding.name)
        let held = record.count
        guard budget.chargeLines(held, ownBody: body, decodedBody: decoded) else {
            return .respond(HTTPResponse(error: .overloaded))
        }
        metrics.eventRejected(route: info.route.name, code: answer.code)
        let response = HTTPResponse(error: error)
        let budget = self.budget
        return .later { complete in
            self.commits.enqueue(
                CommitQueue.Job(records: [], deadLetters: [record]) { _ in
                    budget.release(held)
                    complete(response)
                })
        }
    }

    /// One dead-letter record per rejected event, with the event's own JSON (the normaliser keeps
    /// it with the rejection; until 2026-12-02 the body was scanned a second time to find it).
    /// Not counted here: the caller counts them once the request is not refused 503 `overloaded`
    /// (until 2026-12-04 they were counted here, before that check, so a refused request's events
    /// were counted as dead-lettered, again on each retry, and never written).
    func deadLetters(for rejected: [EventRejection], info: RequestInfo) -> [[UInt8]] {
        rejected.map { rejection in
            DeadLetter.record(
                receivedAt: info.receivedAt, app: info.appID, route: info.route.name, index: rejection.index,
                code: rejection.code, message: rejection.message, raw: rejection.rawEvent, rawIsJSON: true)
        }
    }

    /// The answer for a request on `route` with `records` accepted events once its append finished
    /// (or failed); `accepted` is its answer when the append succeeded (`acceptedResponse`, which
    /// the fast path builds ahead, off the log's syncing thread). It takes the count and the route
    /// name rather than the request and its info: the log's committer runs this and then drops
    /// what the completion holds, and the request's objects are better freed by the thread that
    /// allocated them (a free from another thread takes that thread's malloc arena lock).
    func answer(
        route: String, records: Int, error: (any Error)?, accepted: @autoclosure () -> HTTPResponse
    ) -> HTTPResponse {
        if let error {
            if let ingestError = error as? IngestError { return HTTPResponse(error: ingestError) }
            return HTTPResponse(error: .logUnavailable(reason: "\(error)"))
        }
        metrics.eventsAccepted(route: route, count: records)
        return accepted()
    }

    /// The answer once every accepted event of `outcome` is durable: counts and per-event
    /// rejections and warnings (200, or 400 when nothing was accepted).
    func acceptedResponse(_ outcome: EncodedRequest) -> HTTPResponse {
        // The answer to nearly every single-event request: built once, and sent by the server
        // from its prepared copy (`sharedResponses`).
        if outcome.recordCount == 1, outcome.rejected.isEmpty, outcome.warnings.isEmpty { return Self.acceptedOne }
        var writer = JSONText(capacity: 64 + outcome.rejected.count * 96)
        writer.raw("{\"accepted\":")
        writer.int(outcome.recordCount)
        writer.raw(",\"rejected\":[")
        for (position, rejection) in outcome.rejected.enumerated() {
            if position > 0 { writer.raw(",") }
            writer.raw("{\"index\":")
            writer.int(rejection.index)
            writer.raw(",\"code\":")
            writer.string(rejection.code)
            writer.raw(",\"message\":")
            writer.string(rejection.message)
            writer.raw("}")
        }
        writer.raw("],\"warnings\":[")
        for (position, warning) in outcome.warnings.enumerated() {
            if position > 0 { writer.raw(",") }
            writer.string(warning)
        }
        writer.raw("]}")
        return HTTPResponse(status: outcome.recordCount == 0 ? 400 : 200, body: writer.takeBytes())
    }

    /// `{"accepted":1,"rejected":[],"warnings":[]}`, 200.
    static let acceptedOne = HTTPResponse(status: 200, body: Array(#"{"accepted":1,"rejected":[],"warnings":[]}"#.utf8))

    var sharedResponses: [HTTPResponse] { [Self.acceptedOne] }

    /// The routes' methods and paths (`HTTPHandler.knownStrings`).
    var knownStrings: [String] { Array(Set(Router.routes.flatMap { [$0.method, $0.path] })) }
}

extension IngestError {
    /// The ingest error for a body-level normalisation failure.
    init(_ error: BodyError) {
        switch error {
        case .invalidJSON(let message, let byteOffset): self = .invalidJSON(message: message, byteOffset: byteOffset)
        case .tooManyEvents(let count, let limit): self = .tooManyEvents(count: count, limit: limit)
        case .tooManyValues(let limit): self = .tooManyValues(limit: limit)
        default: self = .invalidBody(code: error.code, message: error.description)
        }
    }
}
