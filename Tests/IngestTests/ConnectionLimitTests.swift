import Foundation
import Testing

@testable import Ingest

@Suite("Connection limits and timeouts")
struct ConnectionLimitTests {
    @Test("a client that stalls mid-headers is disconnected after the idle timeout")
    func slowClient() throws {
        let server = try TestServer { $0.connectionTimeoutSeconds = 1 }
        let client = try server.client()
        client.send(Array("POST /api/analytics/event HTTP/1.1\r\nHost: x\r\n".utf8))
        // The receive timeout is 10 s; the server closes after about 1 s of silence.
        #expect(client.isClosedByPeer())
        #expect(server.isServing())
    }

    @Test("connections beyond the per-IP limit are refused while the first ones are served")
    func perIPLimit() throws {
        let server = try TestServer { $0.perIPConnectionLimit = 2 }
        let first = try server.client()
        let second = try server.client()
        #expect(try first.request("GET", "/healthz").status == 200)
        #expect(try second.request("GET", "/healthz").status == 200)
        let third = try server.client()
        #expect(throws: (any Error).self) { try third.request("GET", "/healthz") }
        #expect(try first.request("GET", "/healthz").status == 200)
    }
}
