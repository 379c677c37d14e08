import EventModel
import Foundation

/// Everything the ingest HTTP edge can be told at start-up; the CLI fills it from flags and
/// environment and calls `validate()` once. Every limit is here so tests can shrink it to reach edges.
package struct IngestConfiguration: Sendable {
    /// Address to bind, IPv4 dotted quad. Default `127.0.0.1`.
    package var host: String = "127.0.0.1"
    /// TCP port to bind; 0 asks the kernel for an ephemeral port (see `HTTPServer.port`). Default 8080.
    package var port: UInt16 = 8080
    /// libmicrohttpd worker threads (one poll loop each; new connections alternate between them).
    /// Default: the number of cores.
    package var threads: Int = ProcessInfo.processInfo.activeProcessorCount
    /// Largest request body as received on the wire (before decompression), in bytes. Default 1 MiB.
    /// A `Content-Length` above it is answered 413 before the body is read.
    package var maxBodyBytes: Int = 1 << 20
    /// Largest request body after decompression, in bytes. Default 10 MiB. A gzip or zstd bomb
    /// stops inflating at this size and is answered 413 `decompressed_too_large`.
    package var maxDecompressedBytes: Int = 10 << 20
    /// Largest single event in bytes (raw JSON of one event). Default 32 KiB.
    package var maxEventBytes: Int = 32 * 1024
    /// Most events in one batch request. Default 2,000.
    package var maxBatchEvents: Int = 2000
    /// Longest event name in characters. Default 128.
    package var maxNameLength: Int = 128
    /// Deepest JSON nesting accepted in a body. Default 32.
    package var maxDepth: Int = 32
    /// Most JSON values in one request body, object keys included; more is answered 413
    /// `too_many_values`. Bounds the scanner's memory per request (16 bytes per value) whatever the
    /// body's density. Default 1,000,000 (16 MB; a body at `maxDecompressedBytes` of SDK-like JSON
    /// holds under 900,000).
    package var maxValues: Int = 1_000_000
    /// Request bytes the server holds at once across all connections: bodies as they arrive (given
    /// back when the request completes) and, once a body is read, its envelope lines and dead
    /// letters until they are durable (the event log's queue holds them meanwhile); a request that
    /// would cross it is answered 503 `overloaded` with `Retry-After`. Bounds memory against many
    /// concurrent large uploads (4,096 connections x 1 MiB would be 4 GiB) and the event log's
    /// queue under a flood of large batches (docs/ingest.md, "Memory per request"); requests of at
    /// most 64 KiB (SDK events, never retried) may use a quarter more. Default 64 MiB
    /// (256 MiB for bodies alone until 2026-12-02).
    package var maxBufferedBodyBytes: Int = 64 << 20

    /// About the most one request holds in `maxBufferedBodyBytes` at once: its body as received (up
    /// to `maxBodyBytes`) and, once read, its envelope lines (about 1.3 times the decoded JSON, which
    /// is up to `maxDecompressedBytes`). A budget below it lets such a request through only while no
    /// other request holds anything, and may refuse small requests while it is held: the server warns
    /// at start (`server.budget_below_request`).
    package var largestRequestBytes: Int {
        // Saturating: the flags take sizes up to 8 EiB.
        let (lines, overflow) = (maxDecompressedBytes / 10).multipliedReportingOverflow(by: 13)
        let (sum, overflowed) = maxBodyBytes.addingReportingOverflow(lines)
        return overflow || overflowed ? .max : sum
    }
    /// Most open HTTP connections across all threads; further clients wait in the listen queue
    /// (backlog 1,024) until one closes. Default 4,096.
    package var connectionLimit: Int = 4096
    /// Most open connections from one client IP address; 0 means no per-IP limit. Default 0
    /// (SDK traffic arrives through NATs and load balancers, so a per-IP cap must be a conscious choice).
    package var perIPConnectionLimit: Int = 0
    /// Memory libmicrohttpd gives each connection for the request head and its read buffer, in
    /// bytes (`MHD_OPTION_CONNECTION_MEMORY_LIMIT`). It zeroes the whole area for every request on a
    /// keep-alive connection, so a smaller one makes small requests cheaper; bodies arrive in
    /// chunks of about half of it. Default 16 KiB (libmicrohttpd's own default is 32 KiB).
    package var connectionMemoryBytes: Int = 16 * 1024
    /// Seconds a connection may stay idle (keep-alive or a stalled upload) before it is closed. Default 30 s.
    package var connectionTimeoutSeconds: Int = 30
    /// How often API keys are reloaded from PostgreSQL. Default 10 s (new keys work within 30 s).
    package var keyRefreshInterval: Duration = .seconds(10)
    /// Per-app rate limit in requests per second (token bucket); nil turns it off. Default nil.
    package var rateLimitPerSecond: Double? = nil
    /// Token-bucket size for the per-app rate limit, in requests. Default 0 = one second's worth.
    package var rateLimitBurst: Double = 0
    /// Threads that append finished requests to the event log (each blocks until its group is
    /// durable). More than two keeps the next group entering the log during an fsync. Default 4.
    package var commitThreads: Int = 4
    /// Seconds to wait for in-flight requests when shutting down. Default 10 s.
    package var shutdownGraceSeconds: Int = 10
    /// Threads that run report requests (each blocks in SQL while the event loops keep serving).
    /// Default 4; pair it with a report connection pool of the same size.
    package var reportThreads: Int = 4
    /// Report requests that may wait for a busy report thread (0: only as many as there are
    /// threads are taken); the next one is answered 503 `reports_busy` with `Retry-After`. Default 32.
    package var reportQueueDepth: Int = 32
    /// Most query-string arguments on a report request; more is 400 `invalid_parameter`. Default 16.
    package var maxQueryArguments: Int = 16
    /// Longest query-string argument name or value, in bytes (after percent-decoding). Default
    /// 1,024: the longest link path ingest stores (`path=`; until 2026-12-05 256, so a link with a
    /// longer path could not be asked for alone).
    package var maxQueryArgumentBytes: Int = 1024

    /// What `maxNameLength` may be: names are keys of the rollups beside a link path
    /// (docs/aggregator.md), and 256 characters of up to 4 bytes each keep that key within what a
    /// PostgreSQL index entry holds (`Envelope.maxNameCharacters`).
    package static let maxNameLengthRange = 1...Envelope.maxNameCharacters
    /// What `maxDepth` may be: an accepted event's envelope must be one the loader reads
    /// (`Envelope.maxEventDepth`).
    package static let maxDepthRange = 2...Envelope.maxEventDepth
    /// What `maxValues` may be.
    package static let maxValuesRange = 1000...100_000_000

    /// A configuration with every default.
    package init() {}

    /// Checks every field; throws `IngestConfigurationError.invalid` naming the first bad field.
    package func validate() throws(IngestConfigurationError) {
        func check(_ condition: Bool, _ field: String, _ reason: String) throws(IngestConfigurationError) {
            if !condition { throw .invalid(field: field, reason: reason) }
        }
        var address = in_addr()
        try check(inet_pton(AF_INET, host, &address) == 1, "host", "must be an IPv4 address such as 127.0.0.1")
        try check(threads >= 1 && threads <= 1024, "threads", "must be between 1 and 1024")
        try check(maxBodyBytes >= 1024, "maxBodyBytes", "must be at least 1024 bytes")
        try check(maxDecompressedBytes >= maxBodyBytes, "maxDecompressedBytes", "must be at least maxBodyBytes")
        try check(maxEventBytes >= 256, "maxEventBytes", "must be at least 256 bytes")
        try check(maxBufferedBodyBytes >= maxBodyBytes, "maxBufferedBodyBytes", "must be at least maxBodyBytes")
        try check(maxBatchEvents >= 1, "maxBatchEvents", "must be at least 1")
        try check(
            Self.maxNameLengthRange.contains(maxNameLength), "maxNameLength",
            "must be between 1 and \(Self.maxNameLengthRange.upperBound)")
        try check(
            Self.maxDepthRange.contains(maxDepth), "maxDepth",
            "must be between 2 and \(Self.maxDepthRange.upperBound)")
        try check(
            Self.maxValuesRange.contains(maxValues), "maxValues",
            "must be between \(Self.maxValuesRange.lowerBound) and \(Self.maxValuesRange.upperBound)")
        try check(connectionLimit >= 1, "connectionLimit", "must be at least 1")
        try check(perIPConnectionLimit >= 0, "perIPConnectionLimit", "must not be negative")
        try check(
            connectionMemoryBytes >= 4096 && connectionMemoryBytes <= 1 << 20, "connectionMemoryBytes",
            "must be between 4KiB and 1MiB")
        try check(connectionTimeoutSeconds >= 1, "connectionTimeoutSeconds", "must be at least 1 second")
        try check(keyRefreshInterval >= .seconds(1), "keyRefreshInterval", "must be at least 1 second")
        try check(keyRefreshInterval <= .seconds(30), "keyRefreshInterval", "must be at most 30 seconds")
        if let rate = rateLimitPerSecond {
            try check(rate > 0, "rateLimitPerSecond", "must be positive when set")
        }
        try check(rateLimitBurst >= 0, "rateLimitBurst", "must not be negative")
        try check(commitThreads >= 1 && commitThreads <= 64, "commitThreads", "must be between 1 and 64")
        try check(shutdownGraceSeconds >= 0, "shutdownGraceSeconds", "must not be negative")
        try check(reportThreads >= 1 && reportThreads <= 64, "reportThreads", "must be between 1 and 64")
        try check(reportQueueDepth >= 0, "reportQueueDepth", "must not be negative")
        try check(maxQueryArguments >= 4, "maxQueryArguments", "must be at least 4")
        try check(maxQueryArgumentBytes >= 16, "maxQueryArgumentBytes", "must be at least 16 bytes")
    }
}

/// A configuration field that `IngestConfiguration.validate()` refused.
package enum IngestConfigurationError: Error, Equatable, CustomStringConvertible {
    /// `field` has a value that cannot work, for `reason`.
    case invalid(field: String, reason: String)

    /// A message naming the problem, safe to log.
    package var description: String {
        switch self {
        case .invalid(let field, let reason): "ingest configuration: \(field) \(reason)"
        }
    }
}
