internal import CMicroHTTPD
import Foundation
import Observability

/// Answers a request the server suspended (`RequestFinish.later`): call it exactly once, from any
/// thread; it hands the answer to the connection's worker and resumes the connection. A value
/// rather than a closure, so whoever keeps it until the answer is known (ingest's log completion)
/// holds it inline instead of pointing to a closure context of its own: one allocation less per
/// deferred request, and one less object freed by the log's thread for the worker's malloc arena.
package struct Completion: Sendable {
    fileprivate let state: RequestState
    fileprivate let connection: SuspendedConnection
    fileprivate let core: ServerCore

    /// Sends `response` as the request's answer.
    package func callAsFunction(_ response: HTTPResponse) {
        state.setAnswer(response)
        MHD_resume_connection(connection.pointer)
        core.suspended.wrappingSubtract(1, ordering: .releasing)
    }
}

let accessHandler: MHD_AccessHandlerCallback = {
    cls, connection, url, method, version, uploadData, uploadSize, conCls in
    guard let cls, let connection, let conCls, let uploadSize else { return .NO }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    guard let existing = conCls.pointee else {
        return begin(core: core, connection: connection, url: url, method: method, version: version, conCls: conCls)
    }
    let state = Unmanaged<RequestState>.fromOpaque(existing).takeUnretainedValue()
    if state.isAnswered {
        // Resumed after a deferred answer.
        guard let response = state.takeAnswer() else { return .YES }
        return queue(response, on: connection, state: state, core: core)
    }
    if uploadSize.pointee > 0, let uploadData {
        let chunk = UnsafeRawBufferPointer(start: uploadData, count: uploadSize.pointee)
        uploadSize.pointee = 0
        if state.earlyResponse != nil {
            state.bytesIn += chunk.count
            return .YES
        }
        guard state.receive(chunk, core: core) == .close else { return .YES }
        // libmicrohttpd takes no answer in the middle of an upload, so the connection is closed
        // without one; it is still counted, as the answer it would have had at the body's end.
        let refusal = refusal(for: state, core: core)
        core.handler.completed(
            route: state.route, status: refusal.status, code: refusal.errorCode, bytesIn: state.bytesIn,
            started: state.started)
        return .NO
    }
    state.isAnswered = true
    if let early = state.earlyResponse {
        return queue(early, on: connection, state: state, core: core)
    }
    if state.isOverBudget || state.isOverLimit {
        return queue(refusal(for: state, core: core), on: connection, state: state, core: core)
    }
    let body = state.body
    state.body = []
    switch core.handler.finish(context: state.context, body: body) {
    case .respond(let response):
        return queue(response, on: connection, state: state, core: core)
    case .later(let start):
        // Nothing of it is queued yet (`start` does that): stopping, it is refused as a whole.
        guard core.enterSuspension() else {
            return queue(HTTPResponse(error: .shuttingDown), on: connection, state: state, core: core)
        }
        MHD_suspend_connection(connection)
        start(Completion(state: state, connection: SuspendedConnection(pointer: connection), core: core))
        return .YES
    }
}

/// The answer to a body that was dropped: 503 `overloaded` when the server's body budget was full,
/// else the handler's 413 for a body over its limit.
private func refusal(for state: RequestState, core: ServerCore) -> HTTPResponse {
    if state.isOverBudget { return HTTPResponse(error: .overloaded) }
    return core.handler.bodyTooLarge(context: state.context, limit: state.limit)
}

/// A body declared up to this size is read and dropped when the answer is known from its head
/// (401, 415, a declared 413...), and the answer is sent once it has arrived. A connection closed
/// with unread bytes in its receive buffer is reset by the kernel, and a client that writes its
/// whole body before reading (Node's `fetch`, Python's `http.client`) then reports a broken pipe
/// instead of the answer: it could not tell a batch too large to split from a network failure to
/// retry. Until 2026-12-05 only bodies up to 64 KiB were read, never a declared 413's: a 2 MB batch
/// sent with `http.client`, or a 6 MB one with Node's `fetch`, got no 413. Over this, the answer is
/// sent at once and the connection closed, as a body that size is no SDK's or batch client's.
private let earlyAnswerDrainLimit = 16 << 20

private func begin(
    core: ServerCore, connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
    version: UnsafePointer<CChar>?, conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>
) -> MHD_Result {
    let started = MonotonicInstant.now
    var head = RequestHead(
        method: method.map { core.string($0) { String(cString: $0) } } ?? "",
        path: url.map { core.string($0) { requestPath(String(cString: $0)) } } ?? "/",
        headers: RequestHeaders(of: connection), connection: connection)
    head.contentLength = head.withHeader(.contentLength) { $0.flatMap(contentLengthValue) }
    let framing = framingProblem(head, version: version)
    core.inFlight.wrappingAdd(1, ordering: .relaxed)
    let state: RequestState
    var early: HTTPResponse?
    switch core.handler.begin(head) {
    case .respond(let response, let route):
        state = RequestState(route: route, started: started, limit: 0, context: ())
        early = response
    case .readBody(let limit, let route, let context):
        state = RequestState(route: route, started: started, limit: limit, context: context)
        state.declaredLength = framing == nil ? head.contentLength : nil
        // The body's buffer is reserved from Content-Length (within the limit) when its first bytes
        // arrive (`RequestState.receive`), and charged to the budget then.
        if framing == nil, let declared = head.contentLength, declared > 0, declared <= limit {
            if !head.awaitsContinue {
                state.reservation = declared
            } else if !state.reserve(declared, core: core) {
                // A client waiting for `100 Continue` is reserved for from the head, as it uploads
                // once invited. It has sent nothing yet: it is told now that the server is full (503
                // with Retry-After, before any upload), instead of being invited to send a body that
                // would most likely be dropped once a chunk did not fit.
                state.isOverBudget = true
                early = refusal(for: state, core: core)
            }
        }
    }
    // Refused whatever the route: the answer is queued at once, which makes libmicrohttpd close the
    // connection (below), so no byte after the head is read as a request of its own.
    if let framing { early = HTTPResponse(error: framing) }
    state.isHead = head.method == "HEAD"
    conCls.pointee = Unmanaged.passRetained(state).toOpaque()
    if let early {
        // libmicrohttpd closes the connection when a response is queued before the request is
        // fully received. A body declared up to `earlyAnswerDrainLimit` is read and dropped first,
        // so the client reads the answer and the connection stays alive; larger or chunked ones are
        // cut off right away, and so are bodies a client holds back until it sees `100 Continue`
        // (RFC 9110 10.1.1): reading those would send it `100 Continue` and have it upload a body
        // only to be refused. A body with a refused framing is never read: where it ends is what is
        // in doubt.
        let chunked = head.headers[.transferEncoding] != nil
        let declared = head.contentLength ?? 0
        let awaitsContinue = declared > 0 && head.awaitsContinue
        if framing == nil, !chunked, !awaitsContinue, declared <= earlyAnswerDrainLimit {
            state.earlyResponse = early
            return .YES
        }
        state.isAnswered = true
        return queue(early, on: connection, state: state, core: core)
    }
    return .YES
}

/// A body framing a request may not have (RFC 9112 6.1, 6.3): `Transfer-Encoding` beside
/// `Content-Length`, or any transfer coding but `chunked` alone, or either header given twice
/// (`Content-Length` with two values). libmicrohttpd 0.9.75 reads the body by `Transfer-Encoding`,
/// else by the first `Content-Length`, and keeps the connection open; a proxy in front that goes
/// by `Content-Length`, or by the last one, would read the same bytes as another request (request
/// smuggling), and the body budget trusted the `Content-Length` of a chunked body. Until
/// 2026-12-04 all of these were served; until 2026-12-05 also a field name with a blank before its
/// colon (RFC 9112 5.1) and chunked HTTP/1.0 (RFC 9112 6.1: HTTP/1.0 has no transfer codings, and
/// libmicrohttpd kept such a connection open).
private func framingProblem(_ head: RequestHead, version: UnsafePointer<CChar>?) -> IngestError? {
    if head.headers.hasBlankBeforeColon {
        return .invalidFraming(reason: "a header field name is followed by whitespace before its colon")
    }
    if head.headers.hasConflictingLengths {
        return .invalidFraming(reason: "Content-Length is given more than once, with different values")
    }
    if head.headers.hasRepeatedCodings {
        return .invalidFraming(reason: "Transfer-Encoding is given more than once; send it once, as chunked")
    }
    guard let coding = head.header(.transferEncoding) else { return nil }
    if let version, strcmp(version, "HTTP/1.0") == 0 {
        return .invalidFraming(reason: "HTTP/1.0 has no transfer codings; send Content-Length")
    }
    if head.headers[.contentLength] != nil {
        return .invalidFraming(reason: "send Content-Length or Transfer-Encoding: chunked, not both")
    }
    guard coding.trimmingCharacters(in: .whitespaces).lowercased() == "chunked" else {
        return .invalidFraming(reason: "the only transfer coding taken is chunked, alone")
    }
    return nil
}

private func queue(_ response: HTTPResponse, on connection: OpaquePointer, state: RequestState, core: ServerCore)
    -> MHD_Result
{
    // libmicrohttpd 0.9.75 ends a chunked answer to HEAD with the last-chunk line anyway, which the
    // client reads as the start of the next answer on the connection: HEAD gets the body read whole,
    // so its headers carry the Content-Length the body has, and no body is sent.
    let response = state.isHead && response.stream != nil ? response.readWhole() : response
    let result: MHD_Result
    if let shared = core.sharedResponse(for: response) {
        result = MHD_queue_response(connection, UInt32(response.status), shared)
    } else {
        guard let made = makeResponse(response, connection: connection, core: core) else { return .NO }
        result = MHD_queue_response(connection, UInt32(response.status), made)
        MHD_destroy_response(made)
    }
    core.handler.completed(
        route: state.route, status: response.status, code: response.errorCode, bytesIn: state.bytesIn,
        started: state.started)
    return result
}

/// Uncounts a closed connection for `Acceptor`, which counted it when handing it over
/// (libmicrohttpd calls this on the connection's loop).
let connectionChanged: MHD_NotifyConnectionCallback = { cls, _, _, change in
    guard let cls else { return }
    // MHD_CONNECTION_NOTIFY_CLOSED = 1 (microhttpd.h); STARTED (0) is counted at the hand-over.
    guard change.rawValue == 1 else { return }
    Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue().openConnections
        .wrappingSubtract(1, ordering: .relaxed)
}

let requestCompleted: MHD_RequestCompletedCallback = { cls, _, conCls, _ in
    guard let cls, let conCls, let pointer = conCls.pointee else { return }
    let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
    let state = Unmanaged<RequestState>.fromOpaque(pointer)
    let request = state.takeUnretainedValue()
    // An answer made for a client that left before it went out: resumed, the connection was found
    // closed before the answer was queued. A body still being made (a report) stops at its next
    // piece, and the request is counted as the answer it would have had. Until 2026-12-05 neither
    // happened: a report worker made a gone client's whole report, and held it, uncounted.
    if let unsent = request.takeAnswer() {
        (unsent.stream as? any HTTPProducedBody)?.cancel()
        core.handler.completed(
            route: request.route, status: unsent.status, code: unsent.errorCode, bytesIn: request.bytesIn,
            started: request.started)
    }
    // The body's bytes leave the budget when the request is over, whichever way it ended.
    core.releaseBody(request.charged)
    state.release()
    conCls.pointee = nil
    core.inFlight.wrappingSubtract(1, ordering: .relaxed)
}
