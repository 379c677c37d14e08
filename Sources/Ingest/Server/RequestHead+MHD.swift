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

extension RequestHead {
    /// The client holds its body back until it sees `100 Continue` (`Expect: 100-continue`, RFC
    /// 9110 10.1.1): a refusal can reach it before it uploads anything.
    var awaitsContinue: Bool { header("Expect")?.lowercased() == "100-continue" }

    /// Looks up a request header by name, case-insensitively (invalid UTF-8 is repaired).
    package func header(_ name: String) -> String? {
        withHeader(name) { $0.map { String(decoding: $0, as: UTF8.self) } }
    }

    /// Runs `body` with a request header's value as bytes (nil when absent), without making a
    /// String of it (for values compared or cut, not kept).
    package func withHeader<Result, Failure: Error>(
        _ name: String, _ body: (UnsafeBufferPointer<UInt8>?) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        var value: UnsafePointer<CChar>?
        var length = 0
        // withCString: a literal name is passed as it is stored (passing the String itself made an
        // array copy of it for every lookup).
        let found = name.withCString { key in
            MHD_lookup_connection_value_n(connection, .HEADER_KIND, key, strlen(key), &value, &length)
        }
        guard found == .YES, let value else { return try body(nil) }
        return try value.withMemoryRebound(to: UInt8.self, capacity: length) { (bytes) throws(Failure) in
            // Whitespace around a field value is not part of it (RFC 9112 §5). libmicrohttpd 0.9.75
            // drops the leading but keeps the trailing: `X-App-ID: app_1 ` was 403 for app "app_1 ",
            // and `X-SDK: ios/1.0.2 ` was stored with its blank. One byte compare when there is none.
            var end = length
            while end > 0, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            return try body(UnsafeBufferPointer(start: bytes, count: end))
        }
    }

    /// The query-string arguments in order (percent-decoded by libmicrohttpd; a name without `=`
    /// has an empty value), or nil when there are more than `limit` of them.
    package func arguments(_ limit: Int) -> [(name: String, value: String)]? {
        queryArguments(of: connection, limit: limit)
    }
}

/// Collects query-string arguments for `queryArguments`; reached through the iterator's `cls`.
private final class ArgumentCollector {
    let limit: Int
    var pairs: [(name: String, value: String)] = []
    var isOverLimit = false
    init(limit: Int) { self.limit = limit }
}

/// The connection's query arguments, or nil when there are more than `limit`. libmicrohttpd has
/// already split them inside its per-connection memory pool (which bounds the URL); the iteration
/// stops after `limit + 1`, so no more than that many are copied into Swift strings.
private func queryArguments(of connection: OpaquePointer, limit: Int) -> [(name: String, value: String)]? {
    let collector = ArgumentCollector(limit: limit)
    withExtendedLifetime(collector) {
        let cls = Unmanaged.passUnretained(collector).toOpaque()
        _ = MHD_get_connection_values(
            connection, .GET_ARGUMENT_KIND,
            { cls, _, key, value in
                guard let cls else { return .NO }
                let collector = Unmanaged<ArgumentCollector>.fromOpaque(cls).takeUnretainedValue()
                guard collector.pairs.count < collector.limit else {
                    collector.isOverLimit = true
                    return .NO
                }
                collector.pairs.append(
                    (key.map { String(cString: $0) } ?? "", value.map { String(cString: $0) } ?? ""))
                return .YES
            }, cls)
    }
    return collector.isOverLimit ? nil : collector.pairs
}
