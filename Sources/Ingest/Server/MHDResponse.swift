internal import CMicroHTTPD
import Foundation

/// A libmicrohttpd response holding a copy of `response`'s body, or reading its stream, and its
/// headers; nil when libmicrohttpd cannot allocate one. A stream made while it is sent
/// (`HTTPProducedBody`) suspends `connection` when nothing is ready, counted in `core.suspended`.
func makeResponse(
    _ response: HTTPResponse, connection: OpaquePointer? = nil, core: ServerCore? = nil
) -> OpaquePointer? {
    let made: OpaquePointer?
    if let stream = response.stream {
        // Owned by the response until libmicrohttpd frees it (`releaseStream`), which it does
        // when the body is sent or the connection ends.
        let owner = Unmanaged.passRetained(
            StreamOwner(stream, connection: connection.map(SuspendedConnection.init), core: core)
        ).toOpaque()
        made = MHD_create_response_from_callback(sizeUnknown, streamBlockSize, readStream, owner, releaseStream)
        // A response that could not be made (out of memory) never calls `releaseStream` (0.9.75's
        // response.c returns NULL before keeping it): released here, which cancels the body, whose
        // producer would otherwise make the whole report for nobody and keep it (until 2026-12-05).
        if made == nil { Unmanaged<StreamOwner>.fromOpaque(owner).release() }
    } else {
        made = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
    }
    guard let made else { return nil }
    MHD_add_response_header(made, "Content-Type", response.contentType)
    for (name, value) in response.headers {
        MHD_add_response_header(made, name, value)
    }
    return made
}

/// What libmicrohttpd asks a streamed body for at most at a time.
private let streamBlockSize = 64 * 1024
/// microhttpd.h's `MHD_SIZE_UNKNOWN`, `MHD_CONTENT_READER_END_OF_STREAM` and `_END_WITH_ERROR`
/// (macros with casts, which Swift does not import).
private let sizeUnknown = UInt64.max
private let endOfStream = -1
private let endWithError = -2

/// Carries a body stream (an existential) through libmicrohttpd's `void *`, with what a produced
/// body needs to suspend and resume its connection.
private final class StreamOwner {
    let stream: any HTTPBodyStream
    let produced: (any HTTPProducedBody)?
    let connection: SuspendedConnection?
    let core: ServerCore?

    init(_ stream: any HTTPBodyStream, connection: SuspendedConnection?, core: ServerCore?) {
        self.stream = stream
        self.connection = connection
        self.core = core
        produced = connection != nil && core != nil ? stream as? any HTTPProducedBody : nil
    }

    deinit { produced?.cancel() }
}

private let readStream: MHD_ContentReaderCallback = { cls, _, buffer, max in
    guard let cls, let buffer, max > 0 else { return endWithError }
    let owner = Unmanaged<StreamOwner>.fromOpaque(cls).takeUnretainedValue()
    let target = UnsafeMutableRawBufferPointer(start: buffer, count: max)
    guard let produced = owner.produced, let connection = owner.connection, let core = owner.core else {
        let count = owner.stream.read(into: target)
        return count > 0 ? count : endOfStream
    }
    // Nothing ready: the connection is suspended from here (microhttpd.h allows it in a content
    // reader) and returning 0 asks again once the producer resumes it.
    let count = produced.read(
        into: target,
        suspend: {
            core.suspended.wrappingAdd(1, ordering: .relaxed)
            MHD_suspend_connection(connection.pointer)
        },
        wake: {
            MHD_resume_connection(connection.pointer)
            core.suspended.wrappingSubtract(1, ordering: .releasing)
        })
    return count > 0 ? count : count == 0 ? endOfStream : 0
}

private let releaseStream: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    Unmanaged<StreamOwner>.fromOpaque(cls).release()
}

/// A connection pointer carried to the thread that finishes a suspended request.
/// `@unchecked Sendable`: `MHD_resume_connection` is documented thread-safe, and the pointer
/// stays valid while the connection is suspended (it cannot time out or close meanwhile).
struct SuspendedConnection: @unchecked Sendable {
    let pointer: OpaquePointer
}
