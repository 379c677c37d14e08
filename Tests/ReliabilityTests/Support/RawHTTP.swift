import Foundation
import Glibc

/// A deliberately small HTTP/1.1 client over a raw TCP socket on 127.0.0.1, so tests can send
/// exactly the bytes they mean (malformed heads, lying Content-Length, byte-a-second bodies) and
/// never depend on a client library's retries. Every call is bounded by a receive/send timeout.
enum RawHTTP {
    /// A parsed answer.
    struct Response: Sendable {
        var status: Int
        /// Header names lowercased.
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        /// `error.code` of an error answer, or nil.
        var errorCode: String? {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
                let error = object["error"] as? [String: Any]
            else { return nil }
            return error["code"] as? String
        }
        /// The decoded JSON object, if the body is one.
        var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] }
    }

    /// Opens a TCP connection to 127.0.0.1:`port` with send and receive timeouts; nil on failure.
    static func connect(port: Int, timeout: Double = 15) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Writes all of `bytes`; false when the peer closed or the send timed out.
    @discardableResult
    static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// Reads one response (Content-Length or until close); nil when nothing parseable arrived
    /// before the timeout or the peer closed.
    static func receive(_ fd: Int32) -> Response? {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var headEnd: Int?
        var contentLength: Int?
        while true {
            if let end = headEnd {
                if let length = contentLength, buffer.count >= end + length { break }
            }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            buffer.append(contentsOf: chunk[0..<n])
            if headEnd == nil, let range = find(Array("\r\n\r\n".utf8), in: buffer) {
                headEnd = range
                let head = String(decoding: buffer[0..<range], as: UTF8.self)
                for line in head.split(separator: "\r\n").dropFirst() {
                    let parts = line.split(separator: ":", maxSplits: 1)
                    if parts.count == 2, parts[0].lowercased() == "content-length" {
                        contentLength = Int(parts[1].trimmingCharacters(in: .whitespaces))
                    }
                }
                if contentLength == nil && head.lowercased().contains("transfer-encoding: chunked") {
                    contentLength = nil
                }
            }
        }
        guard let end = headEnd else { return nil }
        let head = String(decoding: buffer[0..<end], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        guard let statusLine = lines.first else { return nil }
        let statusParts = statusLine.split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 {
                headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        var body = Array(buffer[(end + 4)...])
        if let length = contentLength, body.count > length { body = Array(body[0..<length]) }
        return Response(status: status, headers: headers, body: body)
    }

    /// Sends `bytes` on a fresh connection and reads the answer; nil when none came.
    static func exchange(port: Int, _ bytes: [UInt8], timeout: Double = 15) -> Response? {
        guard let fd = connect(port: port, timeout: timeout) else { return nil }
        defer { close(fd) }
        send(fd, bytes)
        return receive(fd)
    }

    /// Every series of the server's `/metrics` (its name with labels, as printed) and its value; nil
    /// without a 200 answer.
    static func metrics(port: Int) -> [String: Double]? {
        guard let answer = exchange(port: port, request("GET", "/metrics")), answer.status == 200 else { return nil }
        var values: [String: Double] = [:]
        for line in answer.text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            values[String(line[..<space])] = value
        }
        return values
    }

    /// The bytes of a request: `method path HTTP/1.1`, Host, the given headers, Content-Length
    /// (unless a header already sets it or `contentLength` is false), Connection: close, body.
    static func request(
        _ method: String = "POST", _ path: String, headers: [(String, String)] = [], body: [UInt8] = [],
        contentLength: Bool = true
    ) -> [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if contentLength && !headers.contains(where: { $0.0.lowercased() == "content-length" }) {
            head += "Content-Length: \(body.count)\r\n"
        }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// POSTs `body` to `path` with the app's credentials and JSON content type (plus `headers`).
    static func post(
        port: Int, _ path: String, key: String?, app: String?, body: [UInt8],
        headers: [(String, String)] = [], contentType: String? = "application/json", timeout: Double = 15
    ) -> Response? {
        var all: [(String, String)] = []
        if let key { all.append(("Authorization", "Bearer \(key)")) }
        if let app { all.append(("X-App-ID", app)) }
        if let contentType { all.append(("Content-Type", contentType)) }
        all += headers
        return exchange(port: port, request("POST", path, headers: all, body: body), timeout: timeout)
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var i = 0
        while i <= haystack.count - needle.count {
            if haystack[i] == needle[0] && Array(haystack[i..<(i + needle.count)]) == needle { return i }
            i += 1
        }
        return nil
    }
}
