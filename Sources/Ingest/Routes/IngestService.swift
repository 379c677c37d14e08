import EventModel
import Foundation
import Observability
import Synchronization

/// The ingest application behind `HTTPServer`: routing, auth, content checks, limits,
/// normalisation, then a durable append before the answer.
final class IngestService: HTTPHandler {
    /// What `begin` learned, carried to `finish`. A class: the request's context existential holds
    /// the reference itself (a struct this size went into a box of its own), and handing it on
    /// retains one object instead of each of its strings.
    final class RequestInfo: Sendable {
        let route: Route
        let appID: String
        let sdkHeader: String?
        let encoding: ContentEncoding
        let receivedAt: Timestamp

        init(route: Route, appID: String, sdkHeader: String?, encoding: ContentEncoding, receivedAt: Timestamp) {
            self.route = route
            self.appID = appID
            self.sdkHeader = sdkHeader
            self.encoding = encoding
            self.receivedAt = receivedAt
        }
    }

    let configuration: IngestConfiguration
    let router = Router()
    let keys: KeyStore
    let sink: any EventSink
    /// `sink` when it completes appends itself (the event log): requests without dead letters are
    /// appended straight from the HTTP worker and answered from the log's thread that synced them.
    let completingSink: (any CompletingEventSink)?
    /// Requests with dead letters, and every request when the sink cannot complete appends itself.
    let commits: CommitQueue
    let metrics: IngestMetrics
    let rateLimiter: RateLimiter?
    let limits: IngestLimits
    let isShuttingDown = Atomic<Bool>(false)
    /// The report workers; nil when the server has no report provider (routes answer 503
    /// `reports_unavailable`).
    let reports: ReportQueue?
    /// Request bytes held at once (`maxBufferedBodyBytes`): the HTTP server charges bodies to it,
    /// and a read request's envelope lines and dead letters are charged until they are durable.
    let budget: RequestBudget

    init(
        configuration: IngestConfiguration, keys: KeyStore, sink: any EventSink, deadLetterSink: any EventSink,
        reportProvider: (any ReportProvider)? = nil, registry: MetricsRegistry
    ) {
        self.configuration = configuration
        self.keys = keys
        self.sink = sink
        self.completingSink = sink as? any CompletingEventSink
        self.budget = RequestBudget(limit: configuration.maxBufferedBodyBytes)
        self.metrics = IngestMetrics(registry: registry)
        self.commits = CommitQueue(
            sink: sink, deadLetterSink: deadLetterSink, committers: configuration.commitThreads, metrics: registry)
        self.rateLimiter = configuration.rateLimitPerSecond.map {
            RateLimiter(rate: $0, burst: configuration.rateLimitBurst)
        }
        self.limits = IngestLimits(
            maxEventBytes: configuration.maxEventBytes, maxBatchEvents: configuration.maxBatchEvents,
            maxNameLength: configuration.maxNameLength, maxDepth: configuration.maxDepth,
            maxValues: configuration.maxValues)
        self.reports = reportProvider.map {
            ReportQueue(provider: $0, workers: configuration.reportThreads, depth: configuration.reportQueueDepth)
        }
        let budget = self.budget
        let held = registry.gauge(
            "ingest_buffered_bytes", help: "Request bytes held now: bodies, and events not yet durable")
        let peak = registry.gauge(
            "ingest_buffered_bytes_peak", help: "Most request bytes held at once since start (--max-buffered-bodies)")
        registry.gauge("ingest_buffered_bytes_limit", help: "--max-buffered-bodies, in bytes").set(Double(budget.limit))
        registry.addCollector {
            held.set(Double(budget.heldBytes))
            peak.set(Double(budget.peakBytes))
        }
    }

    // MARK: HTTPHandler

    func begin(_ head: RequestHead) -> RequestStart {
        let route: Route
        switch router.match(method: head.method, path: head.path) {
        case .notFound:
            return .respond(HTTPResponse(error: .notFound(path: String(head.path.prefix(200)))), route: "unmatched")
        case .methodNotAllowed(let allow):
            let error = IngestError.methodNotAllowed(method: String(head.method.prefix(16)), allow: allow)
            return .respond(HTTPResponse(error: error), route: "unmatched")
        case .found(let found):
            route = found
        }
        switch route.kind {
        case .healthz:
            return .respond(HTTPResponse(status: 200, body: Array(#"{"status":"ok"}"#.utf8)), route: route.name)
        case .readyz:
            return .respond(readiness(), route: route.name)
        case .metrics:
            let text = metrics.registry.render()
            return .respond(
                HTTPResponse(status: 200, body: Array(text.utf8), contentType: "text/plain; version=0.0.4"),
                route: route.name)
        case .report:
            do {
                let request = try admitReport(head, route: route)
                return .readBody(limit: Self.reportBodyLimit, route: route.name, context: request)
            } catch {
                return .respond(HTTPResponse(error: error), route: route.name)
            }
        case .event, .retention, .conversion, .batch, .link:
            do {
                let info = try admit(head, route: route)
                return .readBody(limit: configuration.maxBodyBytes, route: route.name, context: info)
            } catch {
                return .respond(HTTPResponse(error: error), route: route.name)
            }
        }
    }

    func finish(context: any Sendable, body: [UInt8]) -> RequestFinish {
        // The class cast first: it is the common case, and casting a class instance to a struct
        // type (a report request) takes the runtime's slow path.
        guard let info = context as? RequestInfo else { return runReport(context as! ReportRequest) }
        let decoded: [UInt8]
        do {
            decoded = try Decompressor.decode(body, encoding: info.encoding, limit: configuration.maxDecompressedBytes)
        } catch {
            // A bomb refused at the limit decoded up to 10 MiB first, and a body found corrupt at
            // its end as much: given back like a large body's (until 2026-12-05 only a decoded body
            // was, and a few bombs left ~40 MB resident until a large body came by).
            Heap.returnFreeMemorySoon()
            // The body as received (compressed, so bounded by maxBodyBytes even for a bomb).
            return refuse(
                error, info: info, raw: body, rawIsJSON: false, encoding: info.encoding, body: body.count,
                decoded: body.count)
        }
        // glibc keeps what a rare large request freed (its body, dead letters, the log's copies) for
        // reuse, resident; give it back a second later, at most once a second.
        if decoded.count >= Self.largeBodyBytes { Heap.returnFreeMemorySoon() }
        let outcome: EncodedRequest
        do {
            outcome = try normalize(decoded, info: info)
        } catch {
            // Only bodies the scanner validated completely are kept as JSON. One it did not is kept
            // as received: compressed, that is far smaller than its base64 once decoded (a 10 MB
            // body too dense to scan is ~10 KB of gzip).
            let isJSON =
                switch error {
                case .invalidJSON, .tooDeep, .tooManyValues: false
                default: true
                }
            return refuse(
                IngestError(error), info: info, raw: isJSON ? decoded : body, rawIsJSON: isJSON,
                encoding: isJSON ? .identity : info.encoding, body: body.count, decoded: decoded.count)
        }
        // The normaliser writes every envelope line straight from the body into one NDJSON buffer
        // (no Envelope values, no array per event), always one line per event (pretty-printed data
        // has its line breaks turned into spaces).
        let deadLetters = outcome.rejected.isEmpty ? [] : deadLetters(for: outcome.rejected, info: info)
        // Held until durable: the lines (the log's queue and frame jobs hold a copy meanwhile) and
        // the dead letters. Over the budget, the request is refused before anything is queued, as
        // a body over it is (the client retries); its body's charge stays until it completes.
        let held = outcome.lines.count + deadLetters.reduce(0) { $0 + $1.count }
        // Small (the reserve) by the decoded size: a compressed batch's lines are not an SDK event's.
        guard budget.chargeLines(held, ownBody: body.count, decodedBody: decoded.count) else {
            return .respond(HTTPResponse(error: .overloaded))
        }
        // Counted once they are bound for the dead-letter log, not for a request refused above.
        for rejection in outcome.rejected { metrics.eventRejected(route: info.route.name, code: rejection.code) }
        let budget = self.budget
        if deadLetters.isEmpty, outcome.lines.lines > 0, let log = completingSink {
            // The common case: every event accepted. No committer thread: the worker queues the
            // lines in the log and the log's thread that synced them (its committer, with one sync
            // in flight) resumes the connection once they are durable. The answer is built here, so
            // that thread, which completes a whole group between two syncs, only hands it over.
            let records = outcome.lines.lines
            let accepted = acceptedResponse(outcome)
            let route = info.route.name
            return .later { complete in
                outcome.lines.withUnsafeBytes { ndjson in
                    log.append(ndjson: ndjson, records: records) { error in
                        budget.release(held)
                        self.commits.noteAppend(error: error, records: records)
                        complete(self.answer(route: route, records: records, error: error, accepted: accepted))
                    }
                }
            }
        }
        let job = { @Sendable (complete: Completion) in
            self.commits.enqueue(
                CommitQueue.Job(ndjson: outcome.lines, deadLetters: deadLetters) { error in
                    budget.release(held)
                    complete(
                        self.answer(
                            route: info.route.name, records: outcome.recordCount, error: error,
                            accepted: self.acceptedResponse(outcome)))
                })
        }
        return .later(start: job)
    }

    /// A decoded body this large makes the heap be trimmed after it (SDK bodies are ~0.3-40 KB).
    static let largeBodyBytes = 256 << 10

    /// Counted by `completed` like a declared size over the limit (`ingest_requests_total` with
    /// code `body_too_large`); the body is not kept, so there is no dead letter.
    func bodyTooLarge(context: any Sendable, limit: Int) -> HTTPResponse {
        HTTPResponse(error: .bodyTooLarge(limit: limit))
    }

    func completed(route: String, status: Int, code: String?, bytesIn: Int, started: MonotonicInstant) {
        metrics.request(route: route, status: status, code: code, bytes: bytesIn, started: started)
    }

    // MARK: Steps

    private func readiness() -> HTTPResponse {
        if isShuttingDown.load(ordering: .relaxed) {
            return HTTPResponse(
                status: 503, body: Array(#"{"status":"shutting_down"}"#.utf8), headers: [("Retry-After", "1")])
        }
        if !sink.isWritable {
            return HTTPResponse(
                status: 503, body: Array(#"{"status":"log_unavailable"}"#.utf8), headers: [("Retry-After", "1")])
        }
        if !keys.isLoaded {
            return HTTPResponse(
                status: 503, body: Array(#"{"status":"keys_unavailable"}"#.utf8), headers: [("Retry-After", "5")])
        }
        return HTTPResponse(status: 200, body: Array(#"{"status":"ready"}"#.utf8))
    }

    /// The key and app from `Authorization: Bearer` and `X-App-ID`, checked against the key store.
    /// With `appFromKey` (the link route) a request without `X-App-ID` is for the app its key
    /// belongs to: the link service authenticates with the app's secret key alone (wire format §2).
    func authenticate(_ head: RequestHead, appFromKey: Bool = false) throws(IngestError) -> (
        appID: String, kind: KeyKind
    ) {
        guard let key = head.withHeader(.authorization, { $0.flatMap(Self.bearerToken(bytes:)) }) else {
            throw .missingKey
        }
        guard keys.isLoaded else { throw .keysUnavailable }
        guard let appID = head.header(.appID), !appID.isEmpty else {
            guard appFromKey else { throw .missingAppID }
            guard let owner = keys.owner(of: key) else { throw .invalidKey }
            return owner
        }
        switch keys.verify(key: key, appID: appID) {
        case .unknown: throw .invalidKey
        case .otherApp: throw .keyNotAllowed(reason: "the key does not belong to app \(appID.prefix(100))")
        case .valid(let kind): return (appID, kind)
        }
    }

    /// Checks everything the head can tell: shutdown, auth, rate limit, media type, encoding, size.
    private func admit(_ head: RequestHead, route: Route) throws(IngestError) -> RequestInfo {
        if isShuttingDown.load(ordering: .relaxed) { throw .shuttingDown }
        let (appID, kind) = try authenticate(head, appFromKey: route.kind == .link)
        if route.kind == .link, kind != .secret {
            throw .keyNotAllowed(reason: "the link route takes the app's secret key, not a publishable key")
        }
        if let limiter = rateLimiter, let retryAfter = limiter.acquire(app: appID, kind: kind) {
            throw .rateLimited(retryAfter: retryAfter)
        }
        try head.withHeader(.contentType) { (bytes) throws(IngestError) in try Self.checkContentType(bytes: bytes) }
        let encoding = try ContentEncoding(header: head.header(.contentEncoding))
        if let length = head.contentLength, length > configuration.maxBodyBytes {
            throw .bodyTooLarge(limit: configuration.maxBodyBytes)
        }
        return RequestInfo(
            route: route, appID: appID, sdkHeader: Self.sdkHeader(head), encoding: encoding, receivedAt: .now())
    }

    /// The SDK marker header: `X-SDK`, else `X-Detour-SDK`, the name one iOS SDK version used for
    /// the same `ios/<version>` value (ios-detour DetourConstants.swift @ e0a2c88; docs/ingest.md,
    /// "What the SDK sources send"). The second lookup is made only when `X-SDK` is absent.
    static func sdkHeader(_ head: RequestHead) -> String? {
        head.header(.sdk) ?? head.header(.detourSDK)
    }

    /// The key from `Bearer <key>` (scheme case-insensitive), or nil.
    static func bearerToken(_ header: String) -> String? {
        var header = header
        return header.withUTF8 { bearerToken(bytes: $0) }
    }

    /// `bearerToken(_:)` of a header's bytes as received: what clients send, `Bearer <key>` with
    /// nothing around it, becomes the key without a String of the whole header first.
    static func bearerToken(bytes: UnsafeBufferPointer<UInt8>) -> String? {
        // Matched as bytes; the token starts with an ASCII byte other than a blank, so the general
        // path below would return the same.
        let prefix: StaticString = "Bearer "
        if bytes.count > 7, memcmp(bytes.baseAddress!, prefix.utf8Start, 7) == 0, bytes[7] < 0x80, bytes[7] != 32,
            bytes[7] != 9, bytes[bytes.count - 1] != 32, bytes[bytes.count - 1] != 9
        {
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[7...]), as: UTF8.self)
        }
        return generalBearerToken(String(decoding: bytes, as: UTF8.self))
    }

    /// `bearerToken(_:)` for any spacing and case of the scheme.
    private static func generalBearerToken(_ header: String) -> String? {
        let trimmed = header.trimmingWhitespace()
        guard trimmed.count > 7, trimmed.prefix(7).lowercased() == "bearer " else { return nil }
        let token = trimmed.dropFirst(7).drop(while: { $0 == " " })
        return token.isEmpty ? nil : String(token)
    }

    /// JSON only: `application/json`, optionally with `charset=utf-8`. A missing Content-Type is
    /// accepted, because some SDK HTTP clients omit it, and so is an empty one (as an empty
    /// Content-Encoding is identity); the body must still be JSON.
    static func checkContentType(_ header: String?) throws(IngestError) {
        guard var header else { return }
        try header.withUTF8 { bytes in Result { () throws(IngestError) in try checkContentType(bytes: bytes) } }.get()
    }

    /// `checkContentType(_:)` of a header's bytes as received: the forms SDKs send are matched
    /// without a String of the header (and without splitting and lowercasing).
    static func checkContentType(bytes: UnsafeBufferPointer<UInt8>?) throws(IngestError) {
        guard let bytes else { return }
        func equals(_ form: StaticString) -> Bool {
            bytes.count == form.utf8CodeUnitCount && memcmp(bytes.baseAddress!, form.utf8Start, bytes.count) == 0
        }
        if equals(jsonType) || equals(jsonUTF8Type) { return }
        try checkGeneralContentType(String(decoding: bytes, as: UTF8.self))
    }

    private static let jsonType: StaticString = "application/json"
    private static let jsonUTF8Type: StaticString = "application/json; charset=utf-8"

    /// `checkContentType(_:)` for any case, spacing and parameters.
    private static func checkGeneralContentType(_ header: String) throws(IngestError) {
        if header.trimmingWhitespace().isEmpty { return }
        let parts = header.split(separator: ";", omittingEmptySubsequences: false)
        let mediaType = String(parts[0]).trimmingWhitespace().lowercased()
        guard mediaType == "application/json" else { throw .unsupportedMediaType(String(header.prefix(100))) }
        for parameter in parts.dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, String(pair[0]).trimmingWhitespace().lowercased() == "charset" else { continue }
            let charset = String(pair[1]).trimmingWhitespace().lowercased().replacing("\"", with: "")
            if charset != "utf-8", charset != "utf8" { throw .unsupportedMediaType(String(header.prefix(100))) }
        }
    }

    private func normalize(_ body: [UInt8], info: RequestInfo) throws(BodyError) -> EncodedRequest {
        let context = RequestContext(appID: info.appID, sdkHeader: info.sdkHeader, receivedAt: info.receivedAt)
        switch info.route.kind {
        case .event: return try Normalizer.encodedSingle(body: body, kind: .event, context: context, limits: limits)
        case .retention:
            return try Normalizer.encodedSingle(body: body, kind: .retention, context: context, limits: limits)
        case .conversion: return try Normalizer.encodedConversion(body: body, context: context, limits: limits)
        case .batch: return try Normalizer.encodedBatch(body: body, context: context, limits: limits)
        default: return try Normalizer.encodedLinkEvents(body: body, context: context, limits: limits)
        }
    }
}
