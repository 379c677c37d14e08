import Synchronization

/// The request bytes the server holds at once, across all connections
/// (`IngestConfiguration.maxBufferedBodyBytes`): bodies as they arrive (charged chunk by chunk,
/// given back when the request completes), and the envelope lines and dead letters of a read
/// request until they are durable (charged when the request is normalised, given back before it
/// is answered). What would cross the limit is refused (503 `overloaded`), so under a flood of
/// large batches the requests in flight, and the event log's queue they fill, stay within it.
///
/// Small requests (while the body arrives, one declared by its `Content-Length` to be at most
/// `smallRequestBytes`; for its lines, a body of at most that, decoded: every SDK's single events,
/// 0.3-40 KB)
/// may use a further `reserve`, a quarter of the limit: the clients of large batches (the link
/// service, backends) retry a 503, the SDKs never do, so a flood of batches must not turn their
/// events away. What is held stays within `limit + reserve`.
///
/// Lock-free (two atomics): it is charged for every chunk of every body.
package final class RequestBudget: Sendable {
    /// The most bytes held at once.
    package let limit: Int
    private let held = Atomic<Int>(0)
    private let peak = Atomic<Int>(0)

    /// A body of at most this many bytes is a small request, which may use `reserve` too.
    package static let smallRequestBytes = 64 << 10

    /// What small requests may hold beyond `limit`.
    package var reserve: Int { limit / 4 }

    /// A budget of `limit` bytes (and `reserve` for small requests).
    package init(limit: Int) { self.limit = limit }

    /// Bytes held now.
    package var heldBytes: Int { held.load(ordering: .relaxed) }

    /// The most bytes held at once since the server started (never above `limit + reserve`, except
    /// for one request's lines let through alone: `chargeLines`).
    package var peakBytes: Int { peak.load(ordering: .relaxed) }

    /// Charges `bytes` of a body of `bodyBytes` so far (with them); false (and nothing charged)
    /// when they would cross the limit (with the reserve for a small request's).
    func charge(_ bytes: Int, bodyBytes: Int) -> Bool {
        add(bytes) { total in total <= limit(bodyBytes: bodyBytes) }
    }

    /// Charges a read request's lines (and dead letters), `bytes`, on top of its body's charge
    /// `ownBody`; false (nothing charged) when they would cross the limit while other requests
    /// hold bytes. A request alone is let through whatever its size (its decoded body may be up to
    /// `maxDecompressedBytes`, more than a small budget), so it is never refused for good.
    /// `decodedBody`: the body's size once decoded (default `ownBody`), which decides whether the
    /// request is small: a gzip batch of a few KB that decodes to hundreds is not.
    func chargeLines(_ bytes: Int, ownBody: Int, decodedBody: Int? = nil) -> Bool {
        add(bytes) { total in
            total <= limit(bodyBytes: max(ownBody, decodedBody ?? ownBody)) || total - bytes <= ownBody
        }
    }

    /// Adds `bytes` and keeps them when `admits` the new total (noting the peak); otherwise takes
    /// them back and returns false. Lock-free: another request's charge between the add and the
    /// take-back sees a higher total for that moment, never a lower one.
    @inline(__always)
    private func add(_ bytes: Int, admits: (Int) -> Bool) -> Bool {
        let total = held.wrappingAdd(bytes, ordering: .relaxed).newValue
        guard admits(total) else {
            held.wrappingSubtract(bytes, ordering: .relaxed)
            return false
        }
        notePeak(total)
        return true
    }

    /// The limit for a request whose body has `bodyBytes`.
    @inline(__always)
    private func limit(bodyBytes: Int) -> Int {
        bodyBytes <= Self.smallRequestBytes ? limit + reserve : limit
    }

    /// Gives back `bytes` charged by `charge` or `chargeLines`.
    func release(_ bytes: Int) {
        if bytes > 0 { held.wrappingSubtract(bytes, ordering: .relaxed) }
    }

    /// Raises `peak` to `total` (one load when it is not higher, the common case).
    private func notePeak(_ total: Int) {
        var seen = peak.load(ordering: .relaxed)
        while total > seen {
            let (exchanged, original) = peak.compareExchange(
                expected: seen, desired: total, ordering: .relaxed)
            if exchanged { return }
            seen = original
        }
    }
}
