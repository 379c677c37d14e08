import Foundation

/// A minimal HTTP/1.1 client over a raw socket, so tests control every byte (malformed requests,
/// missing headers, chunked bodies) and reuse one keep-alive connection.
final class RawHTTPClient {
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        /// How many chunks a chunked body came in (0 for a Content-Length body).
        var chunks = 0
        var text: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? { headers[name.lowercased()] }
        /// The `error.code` or nil.
        var errorCode: String? {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
                let error = object["error"] as? [String: Any]
            else { return nil }
            return error["code"] as? String
        }
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:]
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:`port`; sends and receives give up after `timeoutSeconds`.
    init(port: UInt16, timeoutSeconds: Int = 10) throws {
        // A local until connected: were `self.fd` set before a failure, the object would be whole
        // and its deinit would close the descriptor a second time. Between the two closes another
        // thread can be given the same number (a test server's libmicrohttpd eventfd), and the
        // second close takes it from under it: that server later aborted the test process with
        // "Failed to signal quiesce via inter-thread communication channel".
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw Failure(description: "connect failed: \(code)")
        }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Sends raw bytes; returns false when the peer closed.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes {
                Foundation.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// Sends one request with `Content-Length` (unless given in `headers`) and reads the answer.
    func request(
        _ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let hasLength = headers.contains {
            $0.0.lowercased() == "content-length" || $0.0.lowercased() == "transfer-encoding"
        }
        if !hasLength && (method == "POST" || !body.isEmpty) { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        send(Array(head.utf8) + body)
        return try readResponse(hasBody: method != "HEAD")
    }

    /// Reads one response (Content-Length framed, as libmicrohttpd sends for buffer responses);
    /// without `hasBody` (the answer to HEAD) the Content-Length describes a body that is not sent.
    func readResponse(hasBody: Bool = true) throws -> Response {
        while true {
            if let end = headerEnd() {
                let headText = String(decoding: buffer[..<end], as: UTF8.self)
                var lines = headText.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst().split(separator: " ")
                guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
                    throw Failure(description: "bad status line")
                }
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                        in: .whitespaces)
                }
                if hasBody, headers["transfer-encoding"]?.lowercased() == "chunked" {
                    let (body, chunks, consumed) = try readChunked(from: end + 4)
                    buffer.removeFirst(consumed)
                    return Response(status: status, headers: headers, body: body, chunks: chunks)
                }
                let length = hasBody ? Int(headers["content-length"] ?? "0") ?? 0 : 0
                while buffer.count < end + 4 + length {
                    guard try fill() else { throw Failure(description: "closed mid-body") }
                }
                let body = Array(buffer[(end + 4)..<(end + 4 + length)])
                buffer.removeFirst(end + 4 + length)
                return Response(status: status, headers: headers, body: body)
            }
            guard try fill() else { throw Failure(description: "closed before a response") }
        }
    }

    /// Reads a chunked body whose first chunk-size line starts at `start` (RFC 9112 7.1): the body,
    /// its chunk count, and where the message ends (after the last chunk and the trailer section).
    private func readChunked(from start: Int) throws -> (body: [UInt8], chunks: Int, end: Int) {
        var offset = start
        var body: [UInt8] = []
        var chunks = 0
        while true {
            let lineEnd = try line(from: offset)
            let sizeText = String(decoding: buffer[offset..<lineEnd], as: UTF8.self).prefix { $0 != ";" }
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                throw Failure(description: "bad chunk size line \(sizeText.prefix(20))")
            }
            offset = lineEnd + 2
            if size == 0 {
                while true {  // the trailer section, up to an empty line
                    let trailerEnd = try line(from: offset)
                    defer { offset = trailerEnd + 2 }
                    if trailerEnd == offset { break }
                }
                return (body, chunks, offset)
            }
            while buffer.count < offset + size + 2 {
                guard try fill() else { throw Failure(description: "closed mid-chunk") }
            }
            guard buffer[offset + size] == 13, buffer[offset + size + 1] == 10 else {
                throw Failure(description: "a chunk not followed by CRLF")
            }
            body.append(contentsOf: buffer[offset..<(offset + size)])
            chunks += 1
            offset += size + 2
        }
    }

    /// Where the CRLF ending the line at `offset` starts, reading more as needed.
    private func line(from offset: Int) throws -> Int {
        var index = offset
        while true {
            while index + 1 < buffer.count {
                if buffer[index] == 13 && buffer[index + 1] == 10 { return index }
                index += 1
            }
            guard try fill() else { throw Failure(description: "closed mid-line") }
        }
    }

    /// Whether the server closed the connection (reads EOF within the receive timeout).
    func isClosedByPeer() -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
    }

    private func headerEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4)
        where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &chunk, chunk.count, 0)
        if n < 0 { throw Failure(description: "recv failed: \(errno)") }
        if n == 0 { return false }
        buffer.append(contentsOf: chunk[..<n])
        return true
    }
}
