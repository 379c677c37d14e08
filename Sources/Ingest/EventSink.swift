import EventModel

/// Where ingest puts records: the event log for accepted envelopes, the dead-letter log for
/// everything refused. `append` returns only once the records are durable; ingest answers the
/// client after it returns. The lead wires `EventLog.LogWriter` to it.
package protocol EventSink: Sendable {
    /// Appends `records` (each one line without a newline) durably; throws when it cannot.
    func append(_ records: [[UInt8]]) throws
    /// Appends NDJSON (every record followed by `\n`, so it ends with one) durably, in one call;
    /// throws when it cannot. Ingest's accepted events take this form (one buffer per group of
    /// requests, no array per event).
    func append(ndjson: UnsafeRawBufferPointer) throws
    /// Whether appends are expected to succeed right now (used by `/readyz`).
    var isWritable: Bool { get }
}

extension EventSink {
    /// Sinks that cannot tell report themselves writable.
    package var isWritable: Bool { true }

    /// For sinks that only take records: splits the NDJSON into its lines and appends those.
    package func append(ndjson: UnsafeRawBufferPointer) throws {
        guard !ndjson.isEmpty else { return }
        try append(NDJSON.lines(ndjson))
    }
}

/// A sink that completes appends without a thread waiting in them (the event log): ingest hands
/// it a request's records and answers from `completion`, so no committer thread sits between the
/// HTTP worker and the log.
package protocol CompletingEventSink: EventSink {
    /// Queues NDJSON (as `append(ndjson:)` takes it) and returns; `completion` runs once the
    /// records are durable (nil) or cannot be made durable (the error), on another thread or, for
    /// an error found before queueing, on the calling thread before this returns. `records` is
    /// the number of lines in `ndjson` (the caller wrote them and knows).
    func append(ndjson: UnsafeRawBufferPointer, records: Int, completion: @escaping @Sendable ((any Error)?) -> Void)
}
