import Foundation
import Testing

@testable import Ingest

/// The server against `docs/openapi.yaml`: every status and code the server gives for a table of
/// requests is declared for that route, and every error code the server can produce is listed.
@Suite("OpenAPI file matches the server")
struct OpenAPITests {
    struct Probe: Sendable, CustomTestStringConvertible {
        var method: String
        var path: String
        var headers: [(String, String)]
        var body: String
        var testDescription: String { "\(method) \(path) \(body.prefix(30))" }
    }

    static let event =
        #"{"event_name":"purchase","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#
    static let ok = TestServer.sdkHeaders()
    static let secret = TestServer.sdkHeaders(key: TestServer.secretKey)
    static let link =
        #"{"clicks":[{"click_id":"clk_1","url":"https://acme.godetour.link/VnAqasAabE/a","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","kind":"web"}]}"#

    static let probes: [Probe] = {
        var probes: [Probe] = []
        for path in ["/api/analytics/event", "/api/analytics/retention", "/api/analytics/batch", "/api/link/events"] {
            let good = path.hasSuffix("batch") ? "{\"batch\":[\(event)]}" : path.hasPrefix("/api/link") ? link : event
            let headers = path.hasPrefix("/api/link") ? secret : ok
            probes += [
                Probe(method: "POST", path: path, headers: headers, body: good),
                Probe(method: "POST", path: path, headers: headers, body: "{oops"),
                Probe(method: "POST", path: path, headers: headers, body: "[]"),
                Probe(
                    method: "POST", path: path, headers: headers, body: #"{"event_name":1,"batch":[{}],"clicks":[{}]}"#),
                Probe(method: "POST", path: path, headers: [("X-App-ID", TestServer.app)], body: good),
                Probe(method: "POST", path: path, headers: TestServer.sdkHeaders(key: "nope"), body: good),
                Probe(
                    method: "POST", path: path, headers: [("Authorization", "Bearer \(TestServer.secretKey)")],
                    body: good),
                Probe(method: "POST", path: path, headers: TestServer.sdkHeaders(key: TestServer.otherKey), body: good),
                Probe(method: "POST", path: path, headers: headers + [("Content-Encoding", "br")], body: good),
                Probe(method: "POST", path: path, headers: headers + [("Content-Encoding", "gzip")], body: good),
                Probe(
                    method: "POST", path: path, headers: [("Content-Type", "text/plain")] + headers.dropFirst(),
                    body: good),
                Probe(method: "GET", path: path, headers: headers, body: ""),
            ]
        }
        probes.append(Probe(method: "POST", path: "/api/analytics/batch", headers: ok, body: #"{"batch":[]}"#))
        probes.append(Probe(method: "POST", path: "/api/link/events", headers: ok, body: link))
        for path in ["/healthz", "/readyz", "/metrics"] {
            probes.append(Probe(method: "GET", path: path, headers: [], body: ""))
            probes.append(Probe(method: "POST", path: path, headers: [], body: ""))
        }
        probes.append(Probe(method: "GET", path: "/nowhere", headers: [], body: ""))
        // Report routes (this server has no report provider: 503 reports_unavailable after auth).
        for kind in ["links", "funnel", "retention", "attribution"] {
            let path = "/api/reports/" + kind
            probes += [
                Probe(method: "GET", path: path, headers: secret, body: ""),
                Probe(method: "GET", path: path + "?from=2026-06-01&from=2026-06-02", headers: secret, body: ""),
                Probe(method: "GET", path: path + "?app=app_other", headers: secret, body: ""),
                Probe(method: "GET", path: path, headers: ok, body: ""),
                Probe(method: "GET", path: path, headers: [("X-App-ID", TestServer.app)], body: ""),
                Probe(method: "GET", path: path, headers: TestServer.sdkHeaders(key: "nope"), body: ""),
                Probe(method: "POST", path: path, headers: secret, body: "{}"),
            ]
        }
        return probes
    }()

    @Test("every status and error code observed is declared for its route")
    func observedAnswersAreDeclared() throws {
        let spec = try OpenAPISpec.load()
        #expect(spec.operations.count == 11)
        #expect(
            spec.operations[OpenAPISpec.Key(method: "POST", path: "/api/analytics/batch")]?[401] == [
                "missing_key", "invalid_key", "missing_app_id",
            ])
        #expect(
            spec.operations[OpenAPISpec.Key(method: "POST", path: "/api/link/events")]?[503] == [
                "log_unavailable", "shutting_down",
            ])
        #expect(spec.unmatched[404] == ["not_found"])
        let server = try TestServer()
        for probe in Self.probes {
            let response = try server.client().request(
                probe.method, probe.path, headers: probe.headers, body: Array(probe.body.utf8))
            // A 405 is declared on the path's one operation; unknown paths use `x-unmatched-path`.
            let path = String(probe.path.prefix(while: { $0 != "?" }))
            let declared =
                spec.operations[OpenAPISpec.Key(method: probe.method, path: path)]
                ?? spec.operations.first(where: { $0.key.path == path })?.value
                ?? spec.unmatched
            #expect(
                declared[response.status] != nil, "\(probe.testDescription): status \(response.status) not declared")
            if let code = response.errorCode {
                #expect(
                    declared[response.status]?.contains(code) == true,
                    "\(probe.testDescription): code \(code) not declared for \(response.status)")
            }
        }
    }

    @Test("the error code enum lists every code the server can produce, and only those")
    func errorCodesMatch() throws {
        let spec = try OpenAPISpec.load()
        let errors: [IngestError] = [
            .notFound(path: "/"), .methodNotAllowed(method: "GET", allow: "POST"), .missingKey, .missingAppID,
            .invalidKey, .keyNotAllowed(reason: ""), .bodyTooLarge(limit: 1), .decompressedTooLarge(limit: 1),
            .unsupportedEncoding("br"), .unsupportedMediaType("text/plain"),
            .invalidEncoding(encoding: "gzip", reason: ""),
            .invalidJSON(message: "", byteOffset: 0), .tooManyEvents(count: 2, limit: 1), .rateLimited(retryAfter: 1),
            .logUnavailable(reason: ""), .shuttingDown,
            IngestError(.notAnObject), IngestError(.emptyBatch), IngestError(.tooDeep(limit: 1)),
            IngestError(.invalidBatch(message: "")),
            .invalidParameter(name: "from", message: ""), .reportsUnavailable, .reportsBusy(retryAfter: 1),
            // What the report provider passes through (`ReportError.httpStatus` and `.code`).
            .report(status: 404, code: "unknown_app", message: ""),
            .report(status: 503, code: "database_unavailable", message: ""),
        ]
        let produced = Set(errors.map(\.answer.code))
        #expect(produced == spec.allErrorCodes)
        for (key, statuses) in spec.operations {
            for (status, codes) in statuses {
                #expect(codes.isSubset(of: spec.allErrorCodes), "\(key.method) \(key.path) \(status)")
                for code in codes {
                    let producedStatus = errors.first { $0.answer.code == code }?.answer.status
                    #expect(producedStatus == status, "\(code) is declared under \(status)")
                }
            }
        }
    }
}
