internal import CLibPQ
package import Foundation

/// The data of one `COPY ... FROM STDIN`, streamed to the server in chunks as it is appended.
///
/// Append raw bytes in the COPY's format, or use `appendField`/`endRow` for text format, which
/// escapes values (`\\`, tab, newline, carriage return) and writes NULL as `\N`:
/// ```swift
/// try connection.copyIn("copy t (a, b) from stdin") { buffer in
///     buffer.appendField("x"); buffer.appendField(nil as String?); buffer.endRow()
/// }
/// ```
package struct CopyBuffer {
    let sink: CopySink
    var bytes: [UInt8] = []
    var isAtRowStart = true
    /// Bytes buffered before a chunk is sent to the server.
    let chunkBytes: Int

    init(sink: CopySink, chunkBytes: Int) {
        self.sink = sink
        self.chunkBytes = chunkBytes
        bytes.reserveCapacity(chunkBytes + 4096)
    }

    /// Appends raw bytes (already in the COPY format, including delimiters and newlines).
    package mutating func append(_ data: some Collection<UInt8>) {
        if data.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
            bytes.append(contentsOf: data)
        }
        flushIfFull()
    }

    /// Appends raw text (already in the COPY format).
    package mutating func append(_ text: String) {
        append(text.utf8)
    }

    /// Appends one text-format field, escaped, preceded by a tab unless it starts the row.
    package mutating func appendField(_ value: String?) {
        guard let value else {
            separate()
            bytes.append(UInt8(ascii: "\\"))
            bytes.append(UInt8(ascii: "N"))
            return
        }
        appendField(bytes: value.utf8)
    }

    /// Appends one text-format field from UTF-8 bytes (e.g. raw JSON), escaped.
    package mutating func appendField(bytes value: some Collection<UInt8>) {
        separate()
        if value.withContiguousStorageIfAvailable({ appendEscaped($0) }) == nil {
            Array(value).withUnsafeBufferPointer { appendEscaped($0) }
        }
    }

    /// Copies `value` with COPY text-format escapes: `\\`, tab, newline and carriage return.
    private mutating func appendEscaped(_ value: UnsafeBufferPointer<UInt8>) {
        var start = 0
        for index in 0..<value.count {
            let escape: UInt8
            switch value[index] {
            case UInt8(ascii: "\\"): escape = UInt8(ascii: "\\")
            case UInt8(ascii: "\t"): escape = UInt8(ascii: "t")
            case UInt8(ascii: "\n"): escape = UInt8(ascii: "n")
            case UInt8(ascii: "\r"): escape = UInt8(ascii: "r")
            default: continue
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: value[start..<index]))
            bytes.append(UInt8(ascii: "\\"))
            bytes.append(escape)
            start = index + 1
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: value[start..<value.count]))
    }

    /// Appends a timestamp field in UTC (`2026-06-01 10:20:30.123456+00`).
    package mutating func appendField(_ value: Date) {
        separate()
        PostgresTimestamp.write(microseconds: PostgresTimestamp.microseconds(value), into: &bytes)
    }

    /// Appends a text-format field from any encodable value (`Int`, `Date`, `Bool`, ...); nil is `\N`.
    package mutating func appendField<T: PostgresEncodable>(_ value: T?) {
        appendField(value?.postgresText)
    }

    /// Ends the current text-format row.
    package mutating func endRow() {
        bytes.append(UInt8(ascii: "\n"))
        isAtRowStart = true
        flushIfFull()
    }

    private mutating func separate() {
        if !isAtRowStart { bytes.append(UInt8(ascii: "\t")) }
        isAtRowStart = false
    }

    mutating func flushIfFull() {
        if bytes.count >= chunkBytes { flush() }
    }

    mutating func flush() {
        guard !bytes.isEmpty else { return }
        sink.send(bytes)
        bytes.removeAll(keepingCapacity: true)
    }
}

/// Sends COPY data through `PQputCopyData`; remembers the first failure instead of throwing, so
/// `CopyBuffer.append` stays non-throwing and `copyIn` reports the failure after the feed returns.
final class CopySink {
    let conn: OpaquePointer
    var failure: String?

    init(conn: OpaquePointer) { self.conn = conn }

    func send(_ bytes: [UInt8]) {
        guard failure == nil else { return }
        let status = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                PQputCopyData(conn, chars.baseAddress, Int32(chars.count))
            }
        }
        if status != 1 { failure = Connection.errorMessage(conn) }
    }
}

extension Connection {
    /// Runs `COPY ... FROM STDIN` and streams what `feed` appends (in chunks of about 256 KiB).
    ///
    /// The statement takes no bind parameters; interpolate names with `\(identifier:)`.
    /// If `feed` throws, the COPY is aborted (nothing is inserted) and the error rethrown; if the
    /// server rejects a row, the COPY inserts nothing and `PostgresError.server` is thrown with the
    /// server's message (line number in `message`/context). Either way the connection stays usable.
    ///
    /// - Returns: the number of rows copied.
    package func copyIn(_ sql: SQL, _ feed: (inout CopyBuffer) throws -> Void) throws -> Int {
        guard sql.binds.isEmpty else {
            throw PostgresError.copy(message: "COPY statements take no bind parameters")
        }
        let conn = try liveHandle()
        _ = try check(PQexec(conn, sql.text), query: sql.text, expecting: [PGRES_COPY_IN])
        let sink = CopySink(conn: conn)
        var buffer = CopyBuffer(sink: sink, chunkBytes: 256 * 1024)
        var feedError: (any Error)?
        do {
            try feed(&buffer)
            buffer.flush()
        } catch {
            feedError = error
        }
        let abortReason: String? =
            if feedError != nil { "COPY aborted by the client" } else { sink.failure.map { _ in "client send failed" } }
        _ = abortReason.withOptionalCString { PQputCopyEnd(conn, $0) }
        // Drain every result; the COPY's own result carries the row count or the server's error.
        var serverError: PostgresError?
        var copied = 0
        while let result = PQgetResult(conn) {
            let owned = ResultHandle(result)
            switch PQresultStatus(result) {
            case PGRES_COMMAND_OK:
                copied = Int(String(cString: PQcmdTuples(owned.pointer))) ?? 0
            case PGRES_COPY_IN:
                // Still in COPY after a failed send: end it so the connection returns to idle.
                _ = PQputCopyEnd(conn, "COPY aborted by the client")
            default:
                if serverError == nil { serverError = error(from: result, query: sql.text) }
            }
        }
        if let feedError { throw feedError }
        if let serverError { throw serverError }
        if let failure = sink.failure { throw PostgresError.copy(message: failure) }
        return copied
    }
}

extension Optional where Wrapped == String {
    fileprivate func withOptionalCString<R>(_ body: (UnsafePointer<CChar>?) -> R) -> R {
        switch self {
        case .some(let text): return text.withCString { body($0) }
        case .none: return body(nil)
        }
    }
}
