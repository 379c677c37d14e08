import Foundation
import TestSupport
import Testing

@testable import EventModel
@testable import Ingest

/// The server against `docs/openapi.yaml`: every answer to a table of requests (status, error
/// code, required headers, Content-Type and body) is the one declared for its route, the request
/// bodies the table sends are valid or invalid under the request schemas as intended, and every
/// error and rejection code the server can produce is listed.
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
    /// Valid bodies besides `event` and `link`, by route.
    static let goodBodies: [String: [String]] = [
        "/api/analytics/event": [event],
        "/api/analytics/retention": [event],
        "/api/analytics/conversion": [
            event,
            #"{"event_name":"purchase","revenue":29.99,"currency":"USD","product_id":"p","quantity":1,"#
                + #""transaction_id":"T-1","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","#
                + #""device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","metadata":{}}"#,
            #"{"event_name":"refund","revenue":1,"revenue":2,"timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","#
                + #""device_id":"d"}"#,
        ],
        "/api/analytics/batch": [
            "{\"batch\":[\(event)]}",
            #"{"sent_at":"2026-06-01T10:20:31.000Z","batch":[{"type":"retention","event_id":"e-1","#
                + event.dropFirst() + "]}",
            #"{"sentAt":"2026-06-01T10:20:31.000Z","batch":["# + event + "]}",
        ],
        "/api/link/events": [
            link,
            #"{"sent_at":"2026-06-01T10:20:31.000Z","matches":[{"click_id":"clk_1","timestamp":"2026-06-01T10:20:30.123Z","method":"deterministic","score":0.9}]}"#,
            #"{"batch":[{"type":"click","click_id":"clk_2","url":"https://acme.godetour.link/VnAqasAabE/b","timestamp":"2026-06-01T10:20:30.123Z","platform":"android","kind":"web"},{"type":"match","click_id":"clk_2","timestamp":"2026-06-01T10:21:30.123Z","method":"probabilistic","score":0.7}]}"#,
        ],
    ]
    /// Bodies each route refuses (as a whole or every event in them).
    static let badBodies = ["{oops", "[]", #"{"event_name":1,"batch":[{}],"clicks":[{}]}"#, #"{"batch":[]}"#]
    /// A header too large for the connection's memory (16 KiB by default): libmicrohttpd answers 431.
    static let hugeHeader = ("X-Padding", String(repeating: "a", count: 20_000))

    static let probes: [Probe] = ingestProbes + otherProbes + reportProbes

    static let ingestProbes: [Probe] = goodBodies.keys.sorted().flatMap { path in
        let good = goodBodies[path]![0]
        let headers = path.hasPrefix("/api/link") ? secret : ok
        return goodBodies[path]!.map { Probe(method: "POST", path: path, headers: headers, body: $0) }
            + badBodies.map { Probe(method: "POST", path: path, headers: headers, body: $0) } + [
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
                Probe(method: "POST", path: path, headers: headers + [hugeHeader], body: good),
                Probe(method: "GET", path: path, headers: headers, body: ""),
                Probe(method: "HEAD", path: path, headers: headers, body: ""),
            ]
    }

    static let otherProbes: [Probe] =
        ["/healthz", "/readyz", "/metrics"].flatMap { path in
            [
                Probe(method: "GET", path: path, headers: [], body: ""),
                Probe(method: "HEAD", path: path, headers: [], body: ""),
                Probe(method: "POST", path: path, headers: [], body: ""),
                Probe(method: "GET", path: path, headers: [hugeHeader], body: ""),
            ]
        } + [
            Probe(method: "POST", path: "/api/link/events", headers: ok, body: link),
            Probe(method: "GET", path: "/nowhere", headers: [], body: ""),
            Probe(method: "HEAD", path: "/nowhere", headers: [], body: ""),
        ]

    /// Report routes (this server has no report provider: 503 reports_unavailable after auth).
    static let reportProbes: [Probe] = Router.reportKinds.flatMap { kind in
        let path = "/api/reports/" + kind
        return [
            Probe(method: "GET", path: path, headers: secret, body: ""),
            Probe(method: "HEAD", path: path, headers: secret, body: ""),
            Probe(method: "GET", path: path + "?from=2026-06-01&from=2026-06-02", headers: secret, body: ""),
            Probe(method: "GET", path: path + "?app=app_other", headers: secret, body: ""),
            Probe(method: "GET", path: path, headers: ok, body: ""),
            Probe(method: "GET", path: path, headers: [("X-App-ID", TestServer.app)], body: ""),
            Probe(method: "HEAD", path: path, headers: [("X-App-ID", TestServer.app)], body: ""),
            Probe(method: "GET", path: path, headers: TestServer.sdkHeaders(key: "nope"), body: ""),
            Probe(method: "GET", path: path, headers: secret, body: String(repeating: "x", count: 5000)),
            Probe(method: "GET", path: path, headers: secret + [hugeHeader], body: ""),
            Probe(method: "POST", path: path, headers: secret, body: "{}"),
        ]
    }

    /// Sends `probes` to `server` and records every way an answer departs from the spec.
    static func check(_ probes: [Probe], on server: TestServer, against spec: OpenAPISpec) throws {
        for probe in probes {
            let response = try server.client().request(
                probe.method, probe.path, headers: probe.headers, body: Array(probe.body.utf8))
            let path = String(probe.path.prefix(while: { $0 != "?" }))
            for problem in spec.problems(with: response, to: probe.method, path) {
                Issue.record("\(probe.testDescription) → \(response.status): \(problem)")
            }
        }
    }

    @Test("every answer's status, error code, headers, Content-Type and body are declared for its route")
    func answersAreDeclared() throws {
        let spec = try OpenAPISpec.load()
        #expect(spec.operations.count == 19)
        #expect(
            spec.operations[OpenAPISpec.Key(method: "POST", path: "/api/analytics/batch")]?[401] == [
                "missing_key", "invalid_key", "missing_app_id",
            ])
        #expect(
            spec.operations[OpenAPISpec.Key(method: "POST", path: "/api/link/events")]?[503] == [
                "log_unavailable", "shutting_down", "overloaded", "keys_unavailable",
            ])
        #expect(
            spec.operations[OpenAPISpec.Key(method: "POST", path: "/api/link/events")]?[401] == [
                "missing_key", "invalid_key",
            ])
        #expect(spec.unmatched[404] == ["not_found"])
        // Every GET route answers HEAD, so the spec declares HEAD wherever it declares GET.
        for route in Router.routes where route.method == "GET" {
            #expect(spec.operations[OpenAPISpec.Key(method: "HEAD", path: route.path)] != nil, "HEAD \(route.path)")
        }
        try Self.check(Self.probes, on: TestServer(), against: spec)
    }

    @Test("answers of a failing event log, a rate limit and a report provider are declared too")
    func failureAnswersAreDeclared() throws {
        let spec = try OpenAPISpec.load()
        let failing = try TestServer()
        failing.sink.setFailing(true)
        try Self.check(
            [
                Probe(method: "GET", path: "/readyz", headers: [], body: ""),
                Probe(method: "HEAD", path: "/readyz", headers: [], body: ""),
                Probe(method: "POST", path: "/api/analytics/event", headers: Self.ok, body: Self.event),
            ], on: failing, against: spec)
        let limited = try TestServer {
            $0.rateLimitPerSecond = 0.5
            $0.rateLimitBurst = 1
        }
        let twice = Probe(method: "POST", path: "/api/analytics/event", headers: Self.ok, body: Self.event)
        try Self.check([twice, twice], on: limited, against: spec)
        for answer in [
            ReportAnswer.failure(status: 404, code: "unknown_app", message: "unknown app app_acme"),
            .failure(status: 503, code: "database_unavailable", message: "retry later"),
            .failure(status: 409, code: "unknown_time_zone", message: "app app_acme's time zone is not known"),
            .failure(status: 400, code: "invalid_parameter", message: "invalid parameter to"),
            .report(contentType: "text/csv; charset=utf-8", body: Array("day,clicks\n2026-06-01,3\n".utf8)),
        ] {
            let reports = try TestServer(reportProvider: EchoReportProvider(answer: answer))
            try Self.check(
                [Probe(method: "GET", path: "/api/reports/links", headers: Self.secret, body: "")], on: reports,
                against: spec)
        }
    }

    @Test("the probes' good request bodies are valid under the request schemas, and the bad ones are not")
    func requestBodiesMatchSchemas() throws {
        let spec = try OpenAPISpec.load()
        for (path, bodies) in Self.goodBodies {
            let schema = try #require(spec.requestSchema(OpenAPISpec.Key(method: "POST", path: path)), "\(path)")
            for body in bodies {
                let instance = try #require(JSONSchema.Instance.parse(Array(body.utf8)))
                #expect(spec.validator.problems(instance, schema) == [], "\(path) \(body)")
            }
            for body in Self.badBodies {
                if let instance = JSONSchema.Instance.parse(Array(body.utf8)) {
                    #expect(spec.validator.problems(instance, schema) != [], "\(path) \(body) is valid")
                }
            }
        }
    }

    @Test("every schema keyword and format in the file is one the validator checks")
    func schemaKeywordsAreChecked() throws {
        let spec = try OpenAPISpec.load()
        #expect(spec.validator.unsupportedKeywords() == [])
    }

    @Test("the error code enum lists every code the server can produce, and only those")
    func errorCodesMatch() throws {
        let spec = try OpenAPISpec.load()
        let errors: [IngestError] = [
            .notFound(path: "/"), .methodNotAllowed(method: "GET", allow: "POST"), .missingKey, .missingAppID,
            .invalidKey, .keyNotAllowed(reason: ""), .bodyTooLarge(limit: 1), .decompressedTooLarge(limit: 1),
            .unsupportedEncoding("br"), .unsupportedMediaType("text/plain"),
            .invalidEncoding(encoding: "gzip", reason: ""), .invalidFraming(reason: ""),
            .invalidJSON(message: "", byteOffset: 0), .tooManyEvents(count: 2, limit: 1), .rateLimited(retryAfter: 1),
            IngestError(.tooManyValues(limit: 1)),
            .logUnavailable(reason: ""), .shuttingDown, .overloaded, .keysUnavailable,
            IngestError(.notAnObject), IngestError(.emptyBatch), IngestError(.tooDeep(limit: 1)),
            IngestError(.invalidBatch(message: "")),
            .invalidParameter(name: "from", message: ""), .reportsUnavailable, .reportsBusy(retryAfter: 1),
            // What the report provider passes through (`ReportError.httpStatus` and `.code`).
            .report(status: 404, code: "unknown_app", message: ""),
            .report(status: 503, code: "database_unavailable", message: ""),
            .report(status: 409, code: "unknown_time_zone", message: ""),
        ]
        // A case added to IngestError does not compile here until it is listed: add it to `errors`
        // above too, so its code is checked against the spec (the list alone let a new case slip by).
        for error in errors {
            switch error {
            case .notFound, .methodNotAllowed, .missingKey, .missingAppID, .invalidKey, .keysUnavailable,
                .keyNotAllowed, .bodyTooLarge, .decompressedTooLarge, .unsupportedEncoding, .unsupportedMediaType,
                .invalidEncoding, .invalidFraming, .invalidJSON, .invalidBody, .tooManyEvents, .tooManyValues,
                .rateLimited, .logUnavailable, .shuttingDown, .overloaded, .invalidParameter, .reportsUnavailable,
                .reportsBusy, .report:
                break
            }
        }
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

    @Test("the per-event rejection code enum lists every Rejection.Code, and only those")
    func rejectionCodesMatch() throws {
        let spec = try OpenAPISpec.load()
        let codes: [Rejection.Code] = [
            .missingField, .invalidType, .invalidTimestamp, .invalidName, .nameTooLong, .eventTooLarge,
            .invalidPlatform, .invalidDeviceID, .invalidEventID, .invalidKind, .invalidURL, .pathTooLong,
            .invalidClickID, .invalidClickKind, .invalidMethod, .tooDeep, .duplicateKey, .invalidEvent,
        ]
        // Exhaustive, so a new case does not compile until it is in `codes` above.
        for code in codes {
            switch code {
            case .missingField, .invalidType, .invalidTimestamp, .invalidName, .nameTooLong, .eventTooLarge,
                .invalidPlatform, .invalidDeviceID, .invalidEventID, .invalidKind, .invalidURL, .pathTooLong,
                .invalidClickID, .invalidClickKind, .invalidMethod, .tooDeep, .duplicateKey, .invalidEvent:
                break
            }
        }
        #expect(Set(codes.map(\.rawValue)) == spec.rejectionCodes)
        #expect(spec.rejectionCodes.count == codes.count)
    }
}
