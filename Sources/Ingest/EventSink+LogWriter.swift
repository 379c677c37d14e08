import EventLog

/// The event log is the production sink: `append` returns once the records are durable, and
/// `isWritable` feeds `/readyz`.
extension LogWriter: EventSink {}
