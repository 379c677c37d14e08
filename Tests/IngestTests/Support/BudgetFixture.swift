import Foundation
import TestSupport
import Testing

/// What the request-budget tests (ConnectionLimitTests) share: a server whose body limit and budget
/// are both `budget`, padded batch bodies, and an upload stalled 100 bytes short so that the server
/// holds its declared length until the test lets it finish.
enum BudgetFixture {
    static func server(budget: Int) throws -> TestServer {
        try TestServer {
            $0.maxBodyBytes = budget
            $0.maxBufferedBodyBytes = budget
        }
    }

    /// A batch of one SDK event padded with spaces to `size` bytes.
    static func batch(paddedTo size: Int) -> [UInt8] {
        let json = Array("{\"batch\":[\(String(decoding: BadInputTests.event, as: UTF8.self))]}".utf8)
        return json + [UInt8](repeating: 0x20, count: size - json.count)
    }

    /// Posts `body` to the batch route with the SDK headers (and `Content-Encoding: gzip` when
    /// `gzip`), on a connection of its own, and reads the answer.
    static func postBatch(_ body: [UInt8], on server: TestServer, gzip: Bool = false) throws -> RawHTTPClient.Response {
        let encoding = gzip ? [("Content-Encoding", "gzip")] : []
        return try server.client().request(
            "POST", "/api/analytics/batch", headers: TestServer.sdkHeaders() + encoding, body: body)
    }

    /// The head of a batch upload declaring `length` bytes (holding the body back until `100
    /// Continue` when `expectContinue`).
    static func head(_ length: Int, expectContinue: Bool = false) -> [UInt8] {
        var head = "POST /api/analytics/batch HTTP/1.1\r\nHost: x\r\nContent-Length: \(length)\r\n"
        if expectContinue { head += "Expect: 100-continue\r\n" }
        for (name, value) in TestServer.sdkHeaders() { head += "\(name): \(value)\r\n" }
        return Array((head + "\r\n").utf8)
    }

    /// The head of a chunked batch upload (no declared length).
    static func chunkedHead() -> [UInt8] {
        var head = "POST /api/analytics/batch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        for (name, value) in TestServer.sdkHeaders() { head += "\(name): \(value)\r\n" }
        return Array((head + "\r\n").utf8)
    }

    /// `bytes` as one chunk of a chunked body.
    static func chunk(_ bytes: some Collection<UInt8>) -> [UInt8] {
        Array(String(bytes.count, radix: 16).utf8) + [13, 10] + Array(bytes) + [13, 10]
    }

    /// Sends `body` as a batch upload but its last 100 bytes, and waits (bounded) until the server
    /// holds its declared length; `finish` sends the rest.
    static func hold(_ body: [UInt8], on server: TestServer) throws -> RawHTTPClient {
        let client = try server.client()
        client.send(head(body.count) + body.dropLast(100))
        waitUntil(server) { $0 >= body.count }
        return client
    }

    /// Sends the last 100 bytes of a `hold` upload and reads its answer.
    static func finish(_ client: RawHTTPClient, _ body: [UInt8]) throws -> RawHTTPClient.Response {
        client.send(Array(body.suffix(100)))
        return try client.readResponse()
    }

    /// Waits (at most 30 s) until the bytes the server holds satisfy `condition`; an issue if they never do.
    static func waitUntil(
        _ server: TestServer, sourceLocation: SourceLocation = #_sourceLocation, _ condition: (Int) -> Bool
    ) {
        let held = eventually(timeout: .seconds(30), every: .milliseconds(10)) {
            condition(server.server.bufferedBodyBytes)
        }
        #expect(held, "the server holds \(server.server.bufferedBodyBytes) body bytes", sourceLocation: sourceLocation)
    }
}
