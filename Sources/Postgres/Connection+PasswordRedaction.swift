import Foundation

/// libpq quotes the piece of a connection string it could not parse, and that piece can be the
/// password: `postgresql://u:s3cr%ZZet@db/x` fails with `invalid percent-encoded token: "s3cr%ZZet"`,
/// and an unencoded `/` in the password (`u:sec/ret@db`) makes its start the port: `invalid integer
/// value "sec" for connection option "port"`. Those messages go to logs (`load.failing`,
/// `keys.refresh_failed` at every reload) and to standard error, so the connection error masks them.
///
/// Everything here works on bytes. Swift's `String` searches compare grapheme clusters, so a
/// password's `"` or `@` followed by a combining mark would not be found; and until 2026-12-05 two
/// ordinary passwords leaked in part: one holding a `"` (libpq's quotes around it were paired with
/// the password's own, so the rest of it stayed), and one holding an unencoded `@` (libpq splits at
/// the first `@`, so the password's tail became the host name it quoted).
extension Connection {
    /// `message` with every occurrence of a password in `url` of 4 bytes or more, and then every
    /// quoted piece that is part of a password (or holds one), replaced by `***`.
    static func redactingPasswords(in message: String, url: String) -> String {
        let secrets = passwords(in: url).map { Array($0.utf8) }.filter { !$0.isEmpty }
        guard !secrets.isEmpty else { return message }
        let stars = Array("***".utf8)
        // Whole passwords first (a shorter one would match ordinary words): a quote inside one is
        // then gone before the quoted pieces are paired below.
        var bytes = Array(message.utf8)
        for secret in secrets where secret.count >= 4 {
            bytes = replacing(secret, with: stars, in: bytes)
        }
        // Quoted pieces: "..." as libpq writes them.
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while let open = bytes[index...].firstIndex(of: 0x22) {
            out += bytes[index...open]
            guard let close = bytes[(open + 1)...].firstIndex(of: 0x22) else {
                index = open + 1
                break
            }
            let piece = Array(bytes[(open + 1)..<close])
            let isSecret =
                !piece.isEmpty
                && secrets.contains { $0.firstRange(of: piece) != nil || piece.firstRange(of: $0) != nil }
            out += isSecret ? stars : piece
            out.append(0x22)
            index = close + 1
        }
        out += bytes[index...]
        return String(decoding: out, as: UTF8.self)
    }

    /// `bytes` with every occurrence of `target` (not empty) replaced by `replacement`.
    private static func replacing(_ target: [UInt8], with replacement: [UInt8], in bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while let range = bytes[index...].firstRange(of: target) {
            out += bytes[index..<range.lowerBound]
            out += replacement
            index = range.upperBound
        }
        out += bytes[index...]
        return out
    }

    /// The passwords `url` may hold, as written and percent-decoded: a URL's user information after
    /// its first `:` (up to the last `@`, as a person would read a password with an unencoded `/`,
    /// `?` or `@`), and each piece of it between such characters (libpq reads the password only up
    /// to the first `@` and the rest as the host, which it then quotes); and the value of every
    /// `password=` (URL query parameter or keyword).
    static func passwords(in url: String) -> [String] {
        let bytes = Array(url.utf8)
        var found: [[UInt8]] = []
        for scheme in ["postgresql://", "postgres://"] where bytes.starts(with: scheme.utf8) {
            let authority = bytes[scheme.utf8.count...]
            if let at = authority.lastIndex(of: UInt8(ascii: "@")),
                let colon = authority[..<at].firstIndex(of: UInt8(ascii: ":"))
            {
                let userPassword = Array(authority[(colon + 1)..<at])
                found.append(userPassword)
                let separators: [UInt8] = [UInt8(ascii: "@"), UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")]
                let pieces = userPassword.split(whereSeparator: separators.contains).map(Array.init)
                if pieces.count > 1 { found += pieces }
            }
        }
        let key = Array("password".utf8)
        var index = 0
        while let range = bytes[index...].firstRange(of: key) {
            index = range.upperBound
            var value = bytes[range.upperBound...].drop { $0 == UInt8(ascii: " ") }
            guard value.first == UInt8(ascii: "=") else { continue }
            value = value.dropFirst().drop { $0 == UInt8(ascii: " ") }
            if value.first == UInt8(ascii: "'") {
                found.append(Array(value.dropFirst().prefix { $0 != UInt8(ascii: "'") }))
            } else {
                // Up to the next `&` (URL) or the next word holding `=` (keywords): a blank in an
                // unquoted keyword value makes libpq quote the word after it (`missing "=" after`).
                let words = value.prefix { $0 != UInt8(ascii: "&") }
                    .split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
                found.append(
                    Array(words.prefix { !$0.contains(UInt8(ascii: "=")) }.joined(separator: [UInt8(ascii: " ")])))
            }
        }
        let texts = found.map { String(decoding: $0, as: UTF8.self) }
        return texts + texts.compactMap { $0.removingPercentEncoding }
    }
}
