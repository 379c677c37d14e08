import JSONText
package import Observability

/// A response body handed out a piece at a time while it is sent (a large report's JSON):
/// libmicrohttpd asks for the next bytes whenever the connection can take more, on the connection's
/// event-loop thread (so a read must be quick: a copy, not work), one call at a time, and releases
/// the stream when the response is done or the client went away.
package protocol HTTPBodyStream: AnyObject, Sendable {
    /// Copies the next bytes into `buffer` (never empty) and returns how many; 0 at the end.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int
}

/// A body made while it is sent: the thread that made the answer (a report worker) goes on making
/// the body after handing the answer over (`produce`), and the connection sends what is ready, so
/// the first bytes leave before the last are made and a client that keeps up holds little of it.
package protocol HTTPProducedBody: HTTPBodyStream {
    /// Copies the next ready bytes into `buffer` and returns how many, 0 at the end. When none is
    /// ready yet, calls `suspend` while holding the body's lock (so a piece made meanwhile cannot
    /// call `wake` before the connection is suspended), keeps `wake` and returns -1; `wake` is then
    /// called once, by the producing thread, when bytes or the end are ready.
    func read(
        into buffer: UnsafeMutableRawBufferPointer, suspend: () -> Void, wake: @escaping @Sendable () -> Void
    ) -> Int
    /// Makes the whole body (blocking), once. The server's report queue calls it on the worker
    /// after handing the answer over (before, for HEAD, whose answer is read whole). Plain `read`
    /// makes the body first when nothing has.
    func produce()
    /// The response is over (sent, or the client went away): making the rest may stop.
    func cancel()
}

/// One HTTP answer: status, extra headers and a body (JSON unless `contentType` says otherwise).
///
/// A value whose parts sit behind one reference (copied when a shared one is changed): an answer
/// is handed on four or five times between the handler and libmicrohttpd (the log's completion,
/// the request's state, the server's queueing), and with five counted references of its own each
/// hand-over cost five reference counts: 31 per single-event request, a fifth of all it counted
/// (no rate change the machine resolves, docs/ingest-performance.md). A copy is also recognised as such
/// (`isCopy(of:)`), which finds the server's prepared answer without comparing bytes.
package struct HTTPResponse: Sendable {
    private var parts: Parts

    /// The HTTP status code.
    package var status: Int {
        get { parts.status }
        set { unique().status = newValue }
    }
    /// The `Content-Type` header value.
    package var contentType: String {
        get { parts.contentType }
        set { unique().contentType = newValue }
    }
    /// Headers besides `Content-Type`.
    package var headers: [(String, String)] {
        get { parts.headers }
        set { unique().headers = newValue }
    }
    /// The body bytes (empty when `stream` makes the body).
    package var body: [UInt8] {
        get { parts.body }
        set { unique().body = newValue }
    }
    /// A body handed out while it is sent, its length not declared (sent chunked); nil for `body`.
    package var stream: (any HTTPBodyStream)? {
        get { parts.stream }
        set { unique().stream = newValue }
    }
    /// The stable code of an `{"error":{"code":...}}` answer (`init(error:)`), for metrics; nil for
    /// every other answer.
    package var errorCode: String? {
        get { parts.errorCode }
        set { unique().errorCode = newValue }
    }

    /// Creates a response; `contentType` defaults to JSON.
    package init(
        status: Int, body: [UInt8], contentType: String = "application/json", headers: [(String, String)] = []
    ) {
        parts = Parts(status: status, contentType: contentType, headers: headers, body: body)
    }

    /// Whether `other` is this answer as it was made, not merely an equal one (a copy of it).
    func isCopy(of other: HTTPResponse) -> Bool { parts === other.parts }

    /// The parts, not shared with another response, for a change.
    private mutating func unique() -> Parts {
        if !isKnownUniquelyReferenced(&parts) { parts = parts.copy() }
        return parts
    }

    /// `@unchecked Sendable`: changed only through `unique()`, that is while no other response
    /// (so no other thread) holds it.
    private final class Parts: @unchecked Sendable {
        var status: Int
        var contentType: String
        var headers: [(String, String)]
        var body: [UInt8]
        var stream: (any HTTPBodyStream)?
        var errorCode: String?

        init(
            status: Int, contentType: String, headers: [(String, String)], body: [UInt8],
            stream: (any HTTPBodyStream)? = nil, errorCode: String? = nil
        ) {
            self.status = status
            self.contentType = contentType
            self.headers = headers
            self.body = body
            self.stream = stream
            self.errorCode = errorCode
        }

        func copy() -> Parts {
            Parts(
                status: status, contentType: contentType, headers: headers, body: body, stream: stream,
                errorCode: errorCode)
        }
    }

    /// Creates a response whose body `stream` hands out while it is sent.
    package init(
        status: Int, stream: any HTTPBodyStream, contentType: String = "application/json",
        headers: [(String, String)] = []
    ) {
        self.init(status: status, body: [], contentType: contentType, headers: headers)
        self.stream = stream
    }

    /// The same answer with a streamed body read into `body`.
    func readWhole() -> HTTPResponse {
        guard let stream else { return self }
        var whole = self
        whole.stream = nil
        let piece = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { piece.deallocate() }
        while case let count = stream.read(into: piece), count > 0 { whole.body.append(contentsOf: piece[..<count]) }
        return whole
    }

    /// The `{"error":{"code":...,"message":...}}` answer for `error`.
    package init(error: IngestError) {
        let answer = error.answer
        var writer = JSONText(capacity: 96)
        writer.raw("{\"error\":{\"code\":")
        writer.string(answer.code)
        writer.raw(",\"message\":")
        writer.string(answer.message)
        writer.raw("}}")
        self.init(status: answer.status, body: writer.takeBytes(), headers: answer.headers)
        errorCode = answer.code
    }
}

/// What the request head (method, path, headers) decided.
package enum RequestStart: Sendable {
    /// Answer now without reading the body.
    case respond(HTTPResponse, route: String)
    /// Read the body up to `limit` bytes, then call `HTTPHandler.finish` with `context`.
    case readBody(limit: Int, route: String, context: any Sendable)
}

/// What the handler did with a complete request.
package enum RequestFinish: Sendable {
    /// Answer now.
    case respond(HTTPResponse)
    /// The answer comes later: the server suspends the connection, then calls `start` with a
    /// completion that must be called exactly once, from any thread.
    case later(start: @Sendable (_ complete: Completion) -> Void)
}

/// The request head as seen on the first callback; its header values and `arguments` are
/// libmicrohttpd's, so a head is valid only during `begin`.
package struct RequestHead {
    /// `GET`, `POST`, ...
    package var method: String
    /// The path without the query string.
    package var path: String
    /// `Content-Length` as a number, when the request has a readable one (read once per request).
    package var contentLength: Int?
    /// The headers the server reads (`header(_:)`, `withHeader(_:_:)`).
    package var headers: RequestHeaders
    /// The libmicrohttpd connection the arguments are read from (`arguments(_:)`; a pointer, not a
    /// closure capturing it: that was an allocation per request).
    let connection: OpaquePointer
}

/// The application side of `HTTPServer`: decides on the head, then on the full body.
package protocol HTTPHandler: Sendable {
    /// Decides from method, path and headers whether to read the body.
    func begin(_ head: RequestHead) -> RequestStart
    /// Handles a complete body (`context` is what `begin` returned).
    func finish(context: any Sendable, body: [UInt8]) -> RequestFinish
    /// The answer when the body exceeds the `readBody` limit while streaming.
    func bodyTooLarge(context: any Sendable, limit: Int) -> HTTPResponse
    /// Called once per answered request, for metrics (`code`: the answer's `errorCode`).
    func completed(route: String, status: Int, code: String?, bytesIn: Int, started: MonotonicInstant)
    /// Answers given often enough to be built once: the server prepares these at start and sends
    /// the prepared one whenever an answer equals one of them (status, content type, body, no
    /// other headers).
    var sharedResponses: [HTTPResponse] { get }
    /// Methods and paths (without a query) requests use often: the server reuses these Strings
    /// for a request whose method or target equals one, instead of making new ones.
    var knownStrings: [String] { get }
}

extension HTTPHandler {
    /// None by default.
    package var sharedResponses: [HTTPResponse] { [] }
    /// None by default.
    package var knownStrings: [String] { [] }
}
