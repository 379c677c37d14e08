internal import CLibPQ

/// Cancels the statement running on one connection, from any thread: libpq's `PQcancel`, which
/// sends the request on a connection of its own and is thread-safe (the `Connection` itself is
/// not). The statement then fails with SQLSTATE 57014 and its transaction can only roll back;
/// when nothing is running the server ignores the request. Made by `Connection.canceller()`.
///
/// `@unchecked Sendable`: the `PGcancel` is made once, read by `PQcancel` only (thread-safe by
/// libpq's documentation) and freed in `deinit`, after every caller has let go of it.
package final class QueryCanceller: @unchecked Sendable {
    private let request: OpaquePointer

    fileprivate init?(_ connection: OpaquePointer) {
        guard let request = PQgetCancel(connection) else { return nil }
        self.request = request
    }

    deinit { PQfreeCancel(request) }

    /// Sends the cancel request. Blocks while it connects to the server (a server gone from the
    /// network can hold it for as long as the kernel tries); call it off any thread that must not wait.
    /// - Returns: nil when the request was sent, else libpq's reason.
    @discardableResult
    package func cancel() -> String? {
        var reason = [CChar](repeating: 0, count: 256)
        guard PQcancel(request, &reason, Int32(reason.count)) != 1 else { return nil }
        return String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension Connection {
    /// A canceller of this connection's statements, usable from any thread; nil when the connection
    /// is closed (or libpq cannot allocate one). It stays valid for this connection only.
    package func canceller() -> QueryCanceller? {
        guard let handle = try? liveHandle() else { return nil }
        return QueryCanceller(handle)
    }
}
