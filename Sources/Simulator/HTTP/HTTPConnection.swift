internal import Glibc

/// A minimal HTTP/1.1 client connection over a blocking POSIX socket, kept alive between requests.
///
/// Writes a whole request, then reads the status line, the headers and a `Content-Length` or
/// chunked body. Enough for our own server (libmicrohttpd); not a general-purpose client.
/// One thread uses one connection; the socket has send and receive timeouts so nothing hangs.
final class HTTPConnection {
    /// One answer.
    struct Response: Equatable {
        var status: Int
        /// Header names lowercased.
        var headers: [String: String]
        var body: [UInt8]
    }

    private let descriptor: Int32
    private var buffer: [UInt8] = []
    /// Receive scratch space, allocated once per connection.
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    private var start = 0
    /// False once the server asked to close or the socket failed.
    private(set) var isReusable = true
    /// Largest accepted header block and body.
    static let maxHeaderBytes = 64 * 1024
    static let maxBodyBytes = 16 * 1024 * 1024

    /// Connects to the target.
    /// - Parameter timeoutSeconds: applied to connect, every send and every receive.
    /// - Throws: `SimulationError.io` when the socket cannot be created or connected.
    init(to target: TargetAddress, timeoutSeconds: Int = 30) throws(SimulationError) {
        let fd = socket(target.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .io(call: "socket", errno: errno) }
        self.timeoutSeconds = timeoutSeconds
        Self.setTimeouts(fd, microseconds: Int64(timeoutSeconds) * 1_000_000)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var storage = target.storage
        let connected = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                retryingEINTR { connect(fd, address, target.length) }
            }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw .io(call: "connect", errno: code)
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// The timeout of every send and receive, in seconds (`limitWaits` may shorten it).
    private let timeoutSeconds: Int

    /// Shortens the send and receive timeouts so that no wait of the next exchange outlasts
    /// `deadline` (the run's `--deadline`): until 2026-12-05 a request already waiting on a
    /// server that did not answer ran out its whole 30 s timeout past the deadline.
    func limitWaits(until deadline: ContinuousClock.Instant) {
        let left = ContinuousClock.now.duration(to: deadline).components
        let leftMicroseconds = max(1000, left.seconds * 1_000_000 + left.attoseconds / 1_000_000_000_000)
        Self.setTimeouts(descriptor, microseconds: min(Int64(timeoutSeconds) * 1_000_000, leftMicroseconds))
    }

    private static func setTimeouts(_ fd: Int32, microseconds: Int64) {
        var timeout = timeval(tv_sec: Int(microseconds / 1_000_000), tv_usec: Int(microseconds % 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends one serialised request and reads its response.
    /// - Throws: `SimulationError.io`, `.connectionClosed` (nothing answered: safe to resend on a
    ///   new connection) or `.badResponse`.
    func exchange(_ request: [UInt8]) throws(SimulationError) -> Response {
        do {
            try writeAll(request)
            let response = try readResponse()
            if response.headers["connection"]?.lowercased() == "close" { isReusable = false }
            return response
        } catch {
            isReusable = false
            throw error
        }
    }

    private func writeAll(_ bytes: [UInt8]) throws(SimulationError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                retryingEINTR { send(descriptor, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL)) }
            }
            guard written > 0 else {
                if errno == EPIPE || errno == ECONNRESET { throw .connectionClosed }
                throw .io(call: "send", errno: errno)
            }
            offset += written
        }
    }

    /// Reads more bytes into the buffer; returns false at end of stream.
    private func fill() throws(SimulationError) -> Bool {
        let count = chunk.withUnsafeMutableBytes { raw in
            retryingEINTR { recv(descriptor, raw.baseAddress!, raw.count, 0) }
        }
        if count < 0 {
            if errno == ECONNRESET { throw .connectionClosed }
            throw .io(call: "recv", errno: errno)
        }
        if count == 0 { return false }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    /// Consumes and returns bytes up to (excluding) the next CRLF.
    private func readLine(limit: Int) throws(SimulationError) -> [UInt8] {
        var scanned = start
        while true {
            while scanned + 1 < buffer.count {
                if buffer[scanned] == 13 && buffer[scanned + 1] == 10 {
                    let line = Array(buffer[start..<scanned])
                    start = scanned + 2
                    return line
                }
                scanned += 1
            }
            guard buffer.count - start <= limit else { throw .badResponse("line longer than \(limit) bytes") }
            guard try fill() else {
                throw buffer.count == start ? .connectionClosed : .badResponse("truncated headers")
            }
        }
    }

    private func readBytes(_ count: Int) throws(SimulationError) -> [UInt8] {
        while buffer.count - start < count {
            guard try fill() else { throw .badResponse("truncated body") }
        }
        defer { start += count }
        return Array(buffer[start..<start + count])
    }

    private func readResponse() throws(SimulationError) -> Response {
        // Drop the previous answer's bytes (only here: readLine keeps offsets into the buffer).
        buffer.removeSubrange(0..<start)
        start = 0
        let statusLine = String(decoding: try readLine(limit: Self.maxHeaderBytes), as: UTF8.self)
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw .badResponse("status line \(statusLine.prefix(80))")
        }
        var headers: [String: String] = [:]
        var headerBytes = 0
        while true {
            let line = try readLine(limit: Self.maxHeaderBytes)
            if line.isEmpty { break }
            headerBytes += line.count
            guard headerBytes <= Self.maxHeaderBytes else { throw .badResponse("headers too large") }
            let text = String(decoding: line, as: UTF8.self)
            guard let colon = text.firstIndex(of: ":") else { throw .badResponse("header line without a colon") }
            headers[text[..<colon].lowercased()] = text[text.index(after: colon)...].trimmingSpaces()
        }
        var body: [UInt8] = []
        if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            body = try readChunked()
        } else if let length = headers["content-length"].flatMap({ Int($0) }) {
            guard length <= Self.maxBodyBytes else { throw .badResponse("body of \(length) bytes") }
            body = try readBytes(length)
        } else if status >= 200 && status != 204 && status != 304 {
            isReusable = false
            while try fill() {
                guard buffer.count - start <= Self.maxBodyBytes else { throw .badResponse("body too large") }
            }
            body = Array(buffer[start...])
            start = buffer.count
        }
        return Response(status: status, headers: headers, body: body)
    }

    private func readChunked() throws(SimulationError) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let line = String(decoding: try readLine(limit: 1024), as: UTF8.self)
            guard let size = Int(line.split(separator: ";").first ?? "", radix: 16) else {
                throw .badResponse("chunk size \(line.prefix(20))")
            }
            if size == 0 {
                while !(try readLine(limit: Self.maxHeaderBytes)).isEmpty {}  // trailers
                return body
            }
            guard body.count + size <= Self.maxBodyBytes else { throw .badResponse("body too large") }
            body += try readBytes(size)
            _ = try readLine(limit: 2)
        }
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return String(text)
    }
}

/// Calls `body` again while it fails with EINTR.
func retryingEINTR<T: BinaryInteger>(_ body: () -> T) -> T {
    while true {
        let result = body()
        if result >= 0 || errno != EINTR { return result }
    }
}
