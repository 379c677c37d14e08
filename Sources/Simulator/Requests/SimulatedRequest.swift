/// One HTTP request exactly as the simulator sends it (the benchmark replays these with wrk).
package struct SimulatedRequest: Sendable, Equatable {
    /// What the pipeline should answer.
    package enum Expectation: String, Sendable, Equatable {
        /// 2xx (a batch may still report individual rejected events inside a 2xx answer).
        case accepted
        /// 400: the whole request is refused.
        case rejected
    }

    /// One header line.
    package struct Header: Sendable, Equatable {
        /// Header name, e.g. `X-SDK`.
        package var name: String
        /// Header value.
        package var value: String
    }

    /// Always `POST`.
    package var method: String = "POST"
    /// Request target, e.g. `/api/analytics/event`.
    package var path: String
    /// Headers, without `Host` and `Content-Length` (added by `serialized(host:)`).
    package var headers: [Header]
    /// The body as sent (gzip-compressed when `Content-Encoding: gzip` is among the headers).
    package var body: [UInt8]
    /// Events in the body (valid and invalid); link-service posts count clicks plus matches.
    package var eventCount: Int
    /// The expected answer.
    package var expectation: Expectation

    /// The request as HTTP/1.1 bytes, with `Host` and `Content-Length`, keep-alive implied.
    package func serialized(host: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256 + body.count)
        func append(_ text: String) { bytes.append(contentsOf: text.utf8) }
        append(method); append(" "); append(path); append(" HTTP/1.1\r\nHost: "); append(host); append("\r\n")
        for header in headers {
            append(header.name); append(": "); append(header.value); append("\r\n")
        }
        append("Content-Length: "); append(String(body.count)); append("\r\n\r\n")
        bytes.append(contentsOf: body)
        return bytes
    }
}
