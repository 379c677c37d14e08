import Foundation

/// One hostile request and what the server must answer. `status` 0 means "no answer: the server
/// closes the connection"; `statuses` lists every acceptable status when the HTTP layer
/// (libmicrohttpd) rather than our code decides. `code` is `error.code` of an Error answer or the
/// first `rejected[].code` of an IngestResult (docs/openapi.yaml, docs/ingest.md, docs/envelope.md).
struct HostileCase: Sendable, CustomStringConvertible {
    var name: String
    var request: [UInt8]
    var statuses: Set<Int>
    var code: String?
    /// Send the bytes then half-close (a truncated body).
    var halfClose = false
    var description: String { name }
}

/// The table of hostile inputs (issue 9): at least 50 cases.
enum HostileCorpus {
    static let timestamp = "2026-06-01T10:20:30.123Z"
    static let device = "3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"

    /// A valid SDK event with `extra` spliced in before the closing brace.
    static func event(name: String = "hostile", extra: String = "") -> String {
        #"{"event_name":"\#(name)","timestamp":"\#(timestamp)","platform":"ios","device_id":"\#(device)"\#(extra)}"#
    }

    static func cases(app: AppKeys, bombs: (gzip: [UInt8], zstd: [UInt8], dense: [UInt8])) -> [HostileCase] {
        let auth: [(String, String)] = [("Authorization", "Bearer \(app.publishable)"), ("X-App-ID", app.id)]
        let json = auth + [("Content-Type", "application/json")]
        func post(_ body: [UInt8], path: String = "/api/analytics/event", headers: [(String, String)]? = nil) -> [UInt8]
        {
            RawHTTP.request("POST", path, headers: headers ?? json, body: body)
        }
        func body(_ text: String) -> [UInt8] { Array(text.utf8) }
        var cases: [HostileCase] = []
        func add(_ name: String, _ request: [UInt8], _ status: Int, _ code: String?) {
            cases.append(HostileCase(name: name, request: request, statuses: [status], code: code))
        }
        func addRaw(_ name: String, _ request: [UInt8], _ statuses: Set<Int>, halfClose: Bool = false) {
            cases.append(HostileCase(name: name, request: request, statuses: statuses, code: nil, halfClose: halfClose))
        }

        // Auth and routing.
        add(
            "no Authorization header",
            post(body(event()), headers: [("X-App-ID", app.id), ("Content-Type", "application/json")]), 401,
            "missing_key")
        add(
            "unknown key",
            post(
                body(event()),
                headers: [
                    ("Authorization", "Bearer pk_not_a_real_key_000000000000"), ("X-App-ID", app.id),
                    ("Content-Type", "application/json"),
                ]), 401, "invalid_key")
        add(
            "Basic instead of Bearer",
            post(
                body(event()),
                headers: [
                    ("Authorization", "Basic dXNlcjpwYXNz"), ("X-App-ID", app.id), ("Content-Type", "application/json"),
                ]), 401, "missing_key")
        add(
            "no X-App-ID",
            post(
                body(event()),
                headers: [("Authorization", "Bearer \(app.publishable)"), ("Content-Type", "application/json")]), 401,
            "missing_app_id")
        add(
            "publishable key on the link route", post(body(#"{"clicks":[]}"#), path: "/api/link/events"), 403,
            "key_not_allowed")
        add("unknown path", post(body(event()), path: "/api/analytics/nope"), 404, "not_found")
        add("path traversal", post(body(event()), path: "/api/analytics/../../etc/passwd"), 404, "not_found")
        add(
            "GET on an event route", RawHTTP.request("GET", "/api/analytics/event", headers: auth), 405,
            "method_not_allowed")
        add(
            "PUT on the batch route",
            RawHTTP.request("PUT", "/api/analytics/batch", headers: json, body: body(#"{"batch":[]}"#)), 405,
            "method_not_allowed")
        add("DELETE on healthz", RawHTTP.request("DELETE", "/healthz"), 405, "method_not_allowed")

        // Content types and encodings.
        add(
            "text/plain", post(body(event()), headers: auth + [("Content-Type", "text/plain")]), 415,
            "unsupported_media_type")
        add(
            "form encoded", post(body("a=b"), headers: auth + [("Content-Type", "application/x-www-form-urlencoded")]),
            415, "unsupported_media_type")
        add(
            "JSON in UTF-16 charset",
            post(body(event()), headers: auth + [("Content-Type", "application/json; charset=utf-16")]), 415,
            "unsupported_media_type")
        add(
            "multipart",
            post(body("--x\r\n\r\n--x--"), headers: auth + [("Content-Type", "multipart/form-data; boundary=x")]), 415,
            "unsupported_media_type")
        add(
            "brotli encoding", post(body(event()), headers: json + [("Content-Encoding", "br")]), 415,
            "unsupported_encoding")
        add(
            "stacked gzip, gzip", post(body(event()), headers: json + [("Content-Encoding", "gzip, gzip")]), 415,
            "unsupported_encoding")
        add(
            "gzip header on a plain body", post(body(event()), headers: json + [("Content-Encoding", "gzip")]), 400,
            "invalid_encoding")
        add(
            "zstd header on garbage",
            post([0x28, 0xb5, 0x2f, 0xfd, 0xff, 0xff, 0x00, 0x13], headers: json + [("Content-Encoding", "zstd")]), 400,
            "invalid_encoding")
        add(
            "truncated gzip stream", post(Array(bombs.gzip.prefix(64)), headers: json + [("Content-Encoding", "gzip")]),
            400, "invalid_encoding")
        add(
            "gzip bomb: 1 GB of zeros in ~1 MB", post(bombs.gzip, headers: json + [("Content-Encoding", "gzip")]), 413,
            "decompressed_too_large")
        add(
            "zstd bomb: 1 GB of zeros", post(bombs.zstd, headers: json + [("Content-Encoding", "zstd")]), 413,
            "decompressed_too_large")
        add(
            "5 million zeros in 10 KB of gzip", post(bombs.dense, headers: json + [("Content-Encoding", "gzip")]), 413,
            "too_many_values")
        // Refused from its head, but read and dropped first (up to 16 MiB), so a client that sends
        // before it reads gets the 413 rather than a reset (until 2026-12-05 it was answered before
        // the body, which this case then did not send).
        add(
            "declared body of 2 MiB",
            RawHTTP.request(
                "POST", "/api/analytics/batch", headers: json + [("Content-Length", "2097152")],
                body: [UInt8](repeating: 0x20, count: 2_097_152)),
            413, "body_too_large")
        add(
            "body of 1.5 MiB", post([UInt8](repeating: 0x20, count: 1_572_864), path: "/api/analytics/batch"), 413,
            "body_too_large")

        // Broken JSON at every nesting level.
        add("empty body", post([]), 400, "invalid_json")
        add("only whitespace", post(body(" \n\t ")), 400, "invalid_json")
        add("a lone brace", post(body("{")), 400, "invalid_json")
        for level in 1...8 {
            let open = String(repeating: #"{"a":["#, count: level - 1)
            let close = String(repeating: "]}", count: level - 1)
            let broken = level == 1 ? #"{"event_name":"x",}"# : #"{"event_name":"x","data":\#(open)1,}\#(close)}"#
            add("trailing comma at nesting level \(level)", post(body(broken)), 400, "invalid_json")
        }
        add("missing colon", post(body(#"{"event_name" "x"}"#)), 400, "invalid_json")
        add("unterminated string", post(body(#"{"event_name":"x"#)), 400, "invalid_json")
        add("single quotes", post(body("{'event_name':'x'}")), 400, "invalid_json")
        add("comment", post(body(#"{/* c */"event_name":"x"}"#)), 400, "invalid_json")
        add("NaN literal", post(body(event(extra: #","data":NaN"#))), 400, "invalid_json")
        add("Infinity literal", post(body(event(extra: #","data":-Infinity"#))), 400, "invalid_json")
        add("leading zero number", post(body(event(extra: #","data":012"#))), 400, "invalid_json")
        add("bad escape", post(body(event(name: #"a\x"#))), 400, "invalid_json")
        add("raw control character in a string", post(body(event(name: "a\u{01}b"))), 400, "invalid_json")
        add("NUL byte in the body", post(body(event()) + [0]), 400, "invalid_json")
        add("trailing garbage", post(body(event() + " x")), 400, "invalid_json")
        add("two objects", post(body(event() + event())), 400, "invalid_json")
        add(
            "UTF-16LE body", post(Array(event().utf16.flatMap { [UInt8($0 & 0xff), UInt8($0 >> 8)] })), 400,
            "invalid_json")

        // Invalid UTF-8.
        add(
            "invalid UTF-8 byte 0xFF in a string",
            post(
                body(#"{"event_name":""#) + [0xff]
                    + body(#"","timestamp":"\#(timestamp)","platform":"ios","device_id":"\#(device)"}"#)), 400,
            "invalid_json")
        add(
            "overlong UTF-8 encoding of /",
            post(
                body(#"{"event_name":"a"#) + [0xc0, 0xaf]
                    + body(#"","timestamp":"\#(timestamp)","platform":"ios","device_id":"\#(device)"}"#)), 400,
            "invalid_json")
        add(
            "UTF-8 encoded surrogate",
            post(
                body(#"{"event_name":"a"#) + [0xed, 0xa0, 0x80]
                    + body(#"","timestamp":"\#(timestamp)","platform":"ios","device_id":"\#(device)"}"#)), 400,
            "invalid_json")
        add(
            "truncated UTF-8 sequence",
            post(
                body(#"{"event_name":"a"#) + [0xe2, 0x82]
                    + body(#"","timestamp":"\#(timestamp)","platform":"ios","device_id":"\#(device)"}"#)), 400,
            "invalid_json")

        // Numbers, nesting, duplicates, shapes.
        add("huge exponent in data (kept raw)", post(body(event(extra: #","data":{"n":1e999999999}"#))), 200, nil)
        add(
            "300-digit integer in data (kept raw)",
            post(body(event(extra: #","data":{"n":\#(String(repeating: "9", count: 300))}"#))), 200, nil)
        add(
            "number as event_name",
            post(
                body(
                    #"{"event_name":12345678901234567890,"timestamp":"\#(timestamp)","platform":"ios","device_id":"\#(device)"}"#
                )), 400, "invalid_type")
        add(
            "data nested 40 deep",
            post(
                body(
                    event(extra: #","data":\#(String(repeating: "[", count: 40))\#(String(repeating: "]", count: 40))"#)
                )), 400, "too_deep")
        add(
            "100,000 nested arrays",
            post(body(String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000))), 400, "too_deep"
        )
        add("100,000 unclosed objects", post(body(String(repeating: #"{"a":"#, count: 100_000))), 400, "too_deep")
        add(
            "duplicate event_name",
            post(
                body(
                    #"{"event_name":"a","event_name":"b","timestamp":"\#(timestamp)","platform":"ios","device_id":"\#(device)"}"#
                )), 400, "duplicate_key")
        add("top-level array", post(body("[" + event() + "]")), 400, "not_an_object")
        add("top-level string", post(body(#""event""#)), 400, "not_an_object")
        add("top-level null", post(body("null")), 400, "not_an_object")
        add("empty batch", post(body(#"{"batch":[]}"#), path: "/api/analytics/batch"), 400, "empty_batch")
        add("batch is an object", post(body(#"{"batch":{}}"#), path: "/api/analytics/batch"), 400, "invalid_batch")
        add(
            "batch of 2001 events",
            post(
                body(#"{"batch":[\#(Array(repeating: "{}", count: 2001).joined(separator: ","))]}"#),
                path: "/api/analytics/batch"), 400, "too_many_events")
        add(
            "event of 40 KiB", post(body(event(extra: #","data":"\#(String(repeating: "x", count: 40 * 1024))""#))),
            400, "event_too_large")
        add("name of 200 characters", post(body(event(name: String(repeating: "n", count: 200)))), 400, "name_too_long")
        add(
            "timestamp in the year 99999",
            post(
                body(
                    #"{"event_name":"a","timestamp":"99999-01-01T00:00:00Z","platform":"ios","device_id":"\#(device)"}"#
                )), 400, "invalid_timestamp")
        add(
            "platform windows",
            post(
                body(#"{"event_name":"a","timestamp":"\#(timestamp)","platform":"windows","device_id":"\#(device)"}"#)),
            400, "invalid_platform")
        add(
            "missing device_id", post(body(#"{"event_name":"a","timestamp":"\#(timestamp)","platform":"ios"}"#)), 400,
            "missing_field")

        // Malformed HTTP on a raw socket (libmicrohttpd answers these; any 4xx or a close is fine).
        addRaw("garbage request line", Array("GARBAGE\r\n\r\n".utf8), [0, 400])
        addRaw("HTTP/9.9", Array("POST /api/analytics/event HTTP/9.9\r\nHost: x\r\n\r\n".utf8), [0, 400, 505])
        addRaw(
            "header without colon", Array("POST /api/analytics/event HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n".utf8),
            [0, 400])
        addRaw(
            "non-numeric Content-Length",
            RawHTTP.request("POST", "/api/analytics/event", headers: json + [("Content-Length", "abc")]), [0, 400, 413])
        addRaw(
            "negative Content-Length",
            RawHTTP.request("POST", "/api/analytics/event", headers: json + [("Content-Length", "-5")]), [0, 400, 413])
        addRaw(
            "Content-Length and chunked together",
            RawHTTP.request(
                "POST", "/api/analytics/event",
                headers: json + [("Content-Length", "5"), ("Transfer-Encoding", "chunked")],
                body: Array("0\r\n\r\n".utf8), contentLength: false), [0, 400])
        addRaw(
            "64 KiB header value",
            RawHTTP.request(
                "POST", "/api/analytics/event", headers: json + [("X-Big", String(repeating: "h", count: 65536))],
                body: body(event())), [0, 400, 413, 431])
        addRaw(
            "2,000 headers",
            RawHTTP.request(
                "POST", "/api/analytics/event", headers: json + (0..<2000).map { ("X-H\($0)", "v") },
                body: body(event())), [0, 200, 400, 413, 431])
        addRaw(
            "8 KiB URL",
            RawHTTP.request("POST", "/" + String(repeating: "a", count: 8192), headers: json, body: body(event())),
            [0, 404, 400, 413, 414, 431])
        addRaw(
            "truncated body: Content-Length 5000, 100 bytes sent, then half-close",
            RawHTTP.request(
                "POST", "/api/analytics/event", headers: json + [("Content-Length", "5000")],
                body: Array(body(event()).prefix(100)), contentLength: false),
            [0, 400], halfClose: true)
        addRaw(
            "truncated chunked body",
            RawHTTP.request(
                "POST", "/api/analytics/event", headers: json + [("Transfer-Encoding", "chunked")],
                body: Array("ff\r\n{\"event".utf8), contentLength: false), [0, 400], halfClose: true)
        return cases
    }
}
