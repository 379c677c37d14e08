import Foundation
import Glibc
import Locking
import Synchronization

/// A minimal HTTP/1.1 server for client tests: 127.0.0.1, ephemeral port, one thread per
/// connection, keep-alive. Records every request; answers with `respond`. Every blocking call has
/// a 10-second socket timeout, so a broken test cannot hang.
final class TinyHTTPServer: Sendable {
    struct Received: Sendable {
        var connection: Int
        var path: String
        var headers: [String: String]
        var body: [UInt8]
    }

    /// The answer to one request: status, extra header lines, body; `close` ends the connection after it.
    struct Answer: Sendable {
        var status = 200
        var body = "{}"
        var chunked = false
        var close = false
        /// A `Retry-After` header value in seconds.
        var retryAfter: Int?
    }

    let port: UInt16
    private let listener: Int32
    private let received = Locked<[Received]>([])
    private let respond: @Sendable (Received, Int) -> Answer  // (request, index on its connection)
    private let stopped = Atomic<Bool>(false)

    init(respond: @escaping @Sendable (Received, Int) -> Answer = { _, _ in Answer() }) throws {
        self.respond = respond
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 128) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        listener = fd
        Thread { [self] in acceptLoop() }.start()
    }

    /// Everything received so far.
    var requests: [Received] { received.withLock { $0 } }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        var connection = 0
        while !stopped.load(ordering: .relaxed) {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            connection += 1
            let number = connection
            Thread { [self] in serve(client, number) }.start()
        }
    }

    private func serve(_ fd: Int32, _ connection: Int) {
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer: [UInt8] = []
        var index = 0
        while let request = readRequest(fd, &buffer, connection) {
            received.withLock { $0.append(request) }
            let answer = respond(request, index)
            index += 1
            var head = "HTTP/1.1 \(answer.status) X\r\nContent-Type: application/json\r\n"
            if answer.close { head += "Connection: close\r\n" }
            if let retryAfter = answer.retryAfter { head += "Retry-After: \(retryAfter)\r\n" }
            let body = Array(answer.body.utf8)
            var bytes: [UInt8]
            if answer.chunked {
                head += "Transfer-Encoding: chunked\r\n\r\n"
                let half = body.count / 2
                bytes = Array(head.utf8) + Array(String(half, radix: 16).utf8) + [13, 10] + body[..<half] + [13, 10]
                bytes +=
                    Array(String(body.count - half, radix: 16).utf8) + [13, 10] + body[half...]
                    + Array("\r\n0\r\n\r\n".utf8)
            } else {
                bytes = Array((head + "Content-Length: \(body.count)\r\n\r\n").utf8) + body
            }
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if answer.close { return }
        }
    }

    private func readRequest(_ fd: Int32, _ buffer: inout [UInt8], _ connection: Int) -> Received? {
        func fill() -> Bool {
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return false }
            buffer += chunk[0..<count]
            return true
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        var end: Int?
        while true {
            if buffer.count >= 4 {
                end = (0...(buffer.count - 4)).first { Array(buffer[$0..<$0 + 4]) == separator }
            }
            if end != nil { break }
            guard fill() else { return nil }
        }
        let head = String(decoding: buffer[..<end!], as: UTF8.self).components(separatedBy: "\r\n")
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while buffer.count < end! + 4 + length { guard fill() else { return nil } }
        let body = Array(buffer[(end! + 4)..<(end! + 4 + length)])
        buffer.removeFirst(end! + 4 + length)
        let path = head[0].split(separator: " ").dropFirst().first.map(String.init) ?? ""
        return Received(connection: connection, path: path, headers: headers, body: body)
    }
}
