import Foundation

/// libpq quotes the piece of a connection string it could not parse, and that piece can be the
/// password: `postgresql://u:s3cr%ZZet@db/x` fails with `invalid percent-encoded token: "s3cr%ZZet"`,
/// and an unencoded `/` in the password (`u:sec/ret@db`) makes its start the port: `invalid integer
/// value "sec" for connection option "port"`. Those messages go to logs (`load.failing`,
/// `keys.refresh_failed` at every reload) and to standard error, so the connection error masks them.
extension Connection {
    /// `message` with every quoted piece that is part of a password in `url` (or holds one), and
    /// every occurrence of such a password of 4 bytes or more, replaced by `***`.
    static func redactingPasswords(in message: String, url: String) -> String {
        let secrets = passwords(in: url).filter { !$0.isEmpty }
        guard !secrets.isEmpty else { return message }
        var out = ""
        var rest = Substring(message)
        // Quoted pieces: "..." as libpq writes them.
        while let open = rest.firstIndex(of: "\"") {
            out += rest[...open]
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(of: "\"") else {
                rest = rest[afterOpen...]
                break
            }
            let piece = rest[afterOpen..<close]
            let isSecret = !piece.isEmpty && secrets.contains { $0.contains(piece) || piece.contains($0) }
            out += isSecret ? "***" : piece
            out += "\""
            rest = rest[rest.index(after: close)...]
        }
        out += rest
        for secret in secrets where secret.utf8.count >= 4 {
            out = out.replacingOccurrences(of: secret, with: "***")
        }
        return out
    }

    /// The passwords `url` may hold, as written and percent-decoded: a URL's user information after
    /// its first `:` (up to the last `@`, as a person would read a password with an unencoded `/`,
    /// `?` or `@`), and the value of every `password=` (URL query parameter or keyword).
    static func passwords(in url: String) -> [String] {
        var found: [String] = []
        for scheme in ["postgresql://", "postgres://"] where url.hasPrefix(scheme) {
            let authority = url.dropFirst(scheme.count)
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                found.append(String(authority[authority.index(after: colon)..<at]))
            }
        }
        var rest = Substring(url)
        while let range = rest.range(of: "password") {
            var value = rest[range.upperBound...].drop { $0 == " " }
            rest = rest[range.upperBound...]
            guard value.first == "=" else { continue }
            value = value.dropFirst().drop { $0 == " " }
            if value.first == "'" {
                value = value.dropFirst()
                found.append(String(value.prefix { $0 != "'" }))
            } else {
                // Up to the next `&` (URL) or the next word holding `=` (keywords): a blank in an
                // unquoted keyword value makes libpq quote the word after it (`missing "=" after`).
                let words = value.prefix { $0 != "&" }.split(separator: " ", omittingEmptySubsequences: false)
                found.append(words.prefix { !$0.contains("=") }.joined(separator: " "))
            }
        }
        return found + found.compactMap { $0.removingPercentEncoding }
    }
}
