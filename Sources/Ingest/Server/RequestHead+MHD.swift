internal import CMicroHTTPD
import Foundation

/// `bytes` read as `Int(String)` reads decimal text (an optional sign, then at least one digit,
/// nothing else), nil otherwise or when out of range; without making a String first.
func decimalInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    var index = 0
    var negative = false
    if let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
        negative = first == UInt8(ascii: "-")
        index = 1
    }
    guard index < bytes.count else { return nil }
    var value = 0
    while index < bytes.count {
        let digit = Int(bytes[index]) &- 48
        guard (0...9).contains(digit) else { return nil }
        let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
        let (next, overflow2) =
            negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
        guard !overflow1, !overflow2 else { return nil }
        value = next
        index += 1
    }
    return value
}

/// A `Content-Length` value as `begin` reads it: its decimal value, `Int.max` for digits beyond
/// `Int`'s range (libmicrohttpd 0.9.75 takes lengths up to 2^64 - 1, and such a request had no size
/// check: no 413, and `100 Continue` to a client that asked), nil otherwise.
func contentLengthValue(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
    if let value = decimalInteger(bytes) { return value }
    guard !bytes.isEmpty, bytes.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
    return Int.max
}

/// The path of a request target: origin form (`/api/...`, what clients send to a server) as it is;
/// absolute form (`http://host:port/api/...`, which RFC 9112 3.2.2 says a server must accept) without
/// its scheme and authority, `/` when it has no path. libmicrohttpd 0.9.75 passes either as it came
/// (without the query string), and the absolute one matched no route (404).
func requestPath(_ target: String) -> String {
    guard let first = target.utf8.first, first != UInt8(ascii: "/") else { return target }
    guard let scheme = target.range(of: "://") else { return target }
    let name = target[..<scheme.lowerBound].lowercased()
    guard name == "http" || name == "https" else { return target }
    let afterAuthority = target[scheme.upperBound...]
    guard let slash = afterAuthority.firstIndex(of: "/") else { return "/" }
    return String(afterAuthority[slash...])
}

/// The request headers the server reads. `RequestHeaders` finds them all in one pass over the
/// header list when a request's head is complete.
package enum RequestHeaderName: Int, CaseIterable {
    case contentLength, transferEncoding, expect, authorization, appID, contentType, contentEncoding, sdk
    case detourSDK, acceptEncoding

    /// The name in lower case.
    var lowercased: StaticString {
        switch self {
        case .contentLength: "content-length"
        case .transferEncoding: "transfer-encoding"
        case .expect: "expect"
        case .authorization: "authorization"
        case .appID: "x-app-id"
        case .contentType: "content-type"
        case .contentEncoding: "content-encoding"
        case .sdk: "x-sdk"
        case .detourSDK: "x-detour-sdk"
        case .acceptEncoding: "accept-encoding"
        }
    }

    /// The header a field name of `length` bytes at `key` names (ASCII case-insensitively), or nil
    /// for one the server does not read. The length picks the one candidate (12 bytes: by the
    /// first letter), then the bytes are compared.
    init?(key: UnsafePointer<CChar>, length: Int) {
        let candidate: Self
        switch length {
        case 5: candidate = .sdk
        case 6: candidate = .expect
        case 8: candidate = .appID
        case 12: candidate = UInt8(bitPattern: key[0]) | 0x20 == UInt8(ascii: "c") ? .contentType : .detourSDK
        case 13: candidate = .authorization
        case 14: candidate = .contentLength
        case 15: candidate = .acceptEncoding
        case 16: candidate = .contentEncoding
        case 17: candidate = .transferEncoding
        default: return nil
        }
        let name = candidate.lowercased.utf8Start
        for index in 0..<length {
            var byte = UInt8(bitPattern: key[index])
            if byte >= UInt8(ascii: "A"), byte <= UInt8(ascii: "Z") { byte |= 0x20 }
            guard byte == name[index] else { return nil }
        }
        self = candidate
    }
}

/// The values of the headers the server reads (`RequestHeaderName`), found in one pass over the
/// request's header list: one call into libmicrohttpd per request where a lookup per header made
/// seven to ten, each walking the list. The bytes are libmicrohttpd's, so a value is valid only
/// while the head is (during `begin`).
///
/// The pass also sees what a lookup cannot: a framing header given twice. libmicrohttpd 0.9.75
/// reads the first `Content-Length` and the first `Transfer-Encoding`; a proxy in front that reads
/// the last, or joins repeated fields into one list (RFC 9110 5.3), would frame the body otherwise.
package struct RequestHeaders {
    /// Each header's first value, without the blanks after it (RFC 9112 5: whitespace around a
    /// field value is not part of it; libmicrohttpd drops the leading but keeps the trailing, and
    /// `X-App-ID: app_1 ` was 403 for app "app_1 "). nil: absent. One slot per case of
    /// `RequestHeaderName` (10; `UnitTests.requestHeaderNames` checks that they fit).
    private var values = InlineArray<10, UnsafeBufferPointer<UInt8>?>(repeating: nil)
    static let slots = 10
    /// `Content-Length` given more than once with different values (RFC 9112 6.3: the framing is
    /// invalid; the same value repeated may be read as one).
    private(set) var hasConflictingLengths = false
    /// `Transfer-Encoding` given more than once (joined, a list with `chunked` twice or not last).
    private(set) var hasRepeatedCodings = false
    /// A field name followed by whitespace before its colon (`Transfer-Encoding : chunked`), which
    /// RFC 9112 5.1 says a server must refuse: libmicrohttpd 0.9.75 keeps the blank in the name, so
    /// the server did not see the header, while a proxy that trims it frames the body by it.
    private(set) var hasBlankBeforeColon = false

    /// The value of `name`, or nil when the request has no such header.
    package subscript(name: RequestHeaderName) -> UnsafeBufferPointer<UInt8>? { values[name.rawValue] }

    /// Reads `connection`'s request headers.
    init(of connection: OpaquePointer) {
        withUnsafeMutablePointer(to: &self) { headers in
            _ = MHD_get_connection_values_n(
                connection, .HEADER_KIND,
                { cls, _, key, keyLength, value, valueLength in
                    guard let cls, let key else { return .YES }
                    let headers = cls.assumingMemoryBound(to: RequestHeaders.self)
                    if keyLength > 0, key[keyLength - 1] == 0x20 || key[keyLength - 1] == 0x09 {
                        headers.pointee.hasBlankBeforeColon = true
                    }
                    guard let name = RequestHeaderName(key: key, length: keyLength) else { return .YES }
                    headers.pointee.record(name, value, valueLength)
                    return .YES
                }, headers)
        }
    }

    private mutating func record(_ name: RequestHeaderName, _ value: UnsafePointer<CChar>?, _ length: Int) {
        var end = length
        let bytes = UnsafeRawPointer(value)?.assumingMemoryBound(to: UInt8.self)
        if let bytes { while end > 0, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 } }
        let trimmed = UnsafeBufferPointer(start: bytes, count: bytes == nil ? 0 : end)
        guard let first = values[name.rawValue] else {
            values[name.rawValue] = trimmed
            return
        }
        switch name {
        case .contentLength: if !first.elementsEqual(trimmed) { hasConflictingLengths = true }
        case .transferEncoding: hasRepeatedCodings = true
        default: break  // the first is read, as libmicrohttpd reads it
        }
    }
}

extension RequestHead {
    /// The client holds its body back until it sees `100 Continue` (`Expect: 100-continue`, RFC
    /// 9110 10.1.1): a refusal can reach it before it uploads anything.
    var awaitsContinue: Bool { header(.expect)?.lowercased() == "100-continue" }

    /// A request header's value (invalid UTF-8 is repaired).
    package func header(_ name: RequestHeaderName) -> String? {
        headers[name].map { String(decoding: $0, as: UTF8.self) }
    }

    /// Runs `body` with a request header's value as bytes (nil when absent), without making a
    /// String of it (for values compared or cut, not kept).
    package func withHeader<Result, Failure: Error>(
        _ name: RequestHeaderName, _ body: (UnsafeBufferPointer<UInt8>?) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(headers[name])
    }

    /// The query-string arguments in order (percent-decoded by libmicrohttpd; a name without `=`
    /// has an empty value; an empty part, as in `?&a=1` or `a=1&&b=2`, is skipped, as URL parsers
    /// skip it), or why not: more than `limit` of them, or a name or value whose decoded bytes are
    /// not UTF-8.
    package func arguments(_ limit: Int) -> Result<[(name: String, value: String)], QueryArgumentProblem> {
        queryArguments(of: connection, limit: limit)
    }
}

/// Why a query string's arguments were not read.
package enum QueryArgumentProblem: Error, Equatable {
    /// More than the limit.
    case tooMany
    /// The argument of this name (as far as it is readable) has bytes that are not UTF-8 (`%FF`).
    case notUTF8(name: String)
}

/// Collects query-string arguments for `queryArguments`; reached through the iterator's `cls`.
private final class ArgumentCollector {
    let limit: Int
    var pairs: [(name: String, value: String)] = []
    var problem: QueryArgumentProblem?
    init(limit: Int) { self.limit = limit }
}

/// The connection's query arguments, or nil when there are more than `limit`. libmicrohttpd has
/// already split them inside its per-connection memory pool (which bounds the URL); the iteration
/// stops after `limit + 1`, so no more than that many are copied into Swift strings.
///
/// Read with their lengths: a `%00` decodes to a NUL byte inside the value, which is kept (the
/// report API refuses it). As C strings, `from=2026-06-01%00x` read as `2026-06-01` and
/// `path=%2Fa%00b` as `/a`, answering for another link (until 2026-12-05). Bytes that are not
/// UTF-8 are refused, not repaired: `path=/%FF%FE` was read as `/\u{FFFD}\u{FFFD}`, a report
/// for another link (until 2026-12-05).
private func queryArguments(
    of connection: OpaquePointer, limit: Int
) -> Result<[(name: String, value: String)], QueryArgumentProblem> {
    let collector = ArgumentCollector(limit: limit)
    withExtendedLifetime(collector) {
        let cls = Unmanaged.passUnretained(collector).toOpaque()
        _ = MHD_get_connection_values_n(
            connection, .GET_ARGUMENT_KIND,
            { cls, _, key, keySize, value, valueSize in
                guard let cls else { return .NO }
                let collector = Unmanaged<ArgumentCollector>.fromOpaque(cls).takeUnretainedValue()
                // An empty part (`?&a=1`, `a=1&&b=2`): nothing to read (libmicrohttpd reports a
                // leading or doubled `&` as an argument with no name, a trailing one not at all).
                if keySize == 0 && valueSize == 0 { return .YES }
                guard collector.pairs.count < collector.limit else {
                    collector.problem = .tooMany
                    return .NO
                }
                func text(_ pointer: UnsafePointer<CChar>?, _ size: Int) -> String? {
                    guard let pointer else { return "" }
                    return pointer.withMemoryRebound(to: UInt8.self, capacity: size) {
                        String(validating: UnsafeBufferPointer(start: $0, count: size), as: UTF8.self)
                    }
                }
                guard let name = text(key, keySize), let decoded = text(value, valueSize) else {
                    let shown = key.map { key in
                        key.withMemoryRebound(to: UInt8.self, capacity: keySize) {
                            String(decoding: UnsafeBufferPointer(start: $0, count: keySize), as: UTF8.self)
                        }
                    }
                    collector.problem = .notUTF8(name: shown ?? "")
                    return .NO
                }
                collector.pairs.append((name, decoded))
                return .YES
            }, cls)
    }
    if let problem = collector.problem { return .failure(problem) }
    return .success(collector.pairs)
}
