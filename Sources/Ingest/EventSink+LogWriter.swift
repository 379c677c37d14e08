import EventLog

/// The event log is the production sink: `append` returns once the records are durable, and
/// `isWritable` feeds `/readyz`. Ingest answers single requests from the log's completion
/// (`CompletingEventSink`), without a committer thread of its own.
extension LogWriter: CompletingEventSink {
    /// `LogWriter.append(ndjson:records:completion:)` with the error as `any Error`.
    package func append(
        ndjson: UnsafeRawBufferPointer, records: Int, completion: @escaping @Sendable ((any Error)?) -> Void
    ) {
        append(ndjson: ndjson, records: records, completion: { (error: LogError?) in completion(error) })
    }
}
