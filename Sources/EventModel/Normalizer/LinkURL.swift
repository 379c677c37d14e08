// Link URLs: `https://<org>.godetour.link/<app-hash>/<path>?<query>#<fragment>`.
//
// - The host is not checked (apps may use custom domains); a scheme and a host are required.
// - `path` is everything after the app-hash segment, starting with `/`, kept as sent (no percent
//   decoding, so `%2F` stays distinct from `/`). A URL with no segment after the app hash
//   (`https://acme.godetour.link/VnAqasAabE` or `.../VnAqasAabE/`) has path `/`.
// - The query is split on `&`; each `name=value` is percent-decoded with `+` as space (form
//   encoding, which is what UTM links use). A malformed `%` escape is kept literally, a parameter
//   without `=` has an empty value, empty names are skipped, and the first occurrence of a name
//   wins. The fragment is ignored.

/// A parsed link URL.
package struct LinkURL: Sendable, Equatable {
    /// The link path after the app hash, `/` when there is none.
    package var path: String
    /// Decoded query parameters in URL order, first occurrence of a name wins.
    package var query: [QueryParameter]

    /// Parses a link URL; nil when it has no `scheme://host`.
    package init?(_ url: some Collection<UInt8>) {
        let bytes = Array(url)
        guard let schemeEnd = LinkURL.find(bytes[...], UInt8(ascii: ":"), from: 0), schemeEnd > 0,
            schemeEnd + 2 < bytes.count, bytes[schemeEnd + 1] == UInt8(ascii: "/"),
            bytes[schemeEnd + 2] == UInt8(ascii: "/")
        else { return nil }
        for b in bytes[0..<schemeEnd] {
            let isSchemeByte =
                (b | 0x20) &- 97 < 26 || b &- 48 < 10 || b == UInt8(ascii: "+")
                || b == UInt8(ascii: "-") || b == UInt8(ascii: ".")
            guard isSchemeByte else { return nil }
        }
        guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return nil }
        var i = schemeEnd + 3
        let hostStart = i
        while i < bytes.count, bytes[i] != UInt8(ascii: "/"), bytes[i] != UInt8(ascii: "?"),
            bytes[i] != UInt8(ascii: "#")
        {
            i += 1
        }
        guard i > hostStart else { return nil }
        var end = bytes.count
        if let hash = LinkURL.find(bytes[...], UInt8(ascii: "#"), from: i) { end = hash }
        let queryStart = LinkURL.find(bytes[0..<end], UInt8(ascii: "?"), from: i)
        let pathEnd = queryStart ?? end
        // Skip "/<app-hash>"; the rest is the link path.
        var p = i
        if p < pathEnd, bytes[p] == UInt8(ascii: "/") { p += 1 }
        while p < pathEnd, bytes[p] != UInt8(ascii: "/") { p += 1 }
        if p < pathEnd, pathEnd - p > 1 {
            path = String(decoding: bytes[p..<pathEnd], as: UTF8.self)
        } else {
            path = "/"
        }
        query = []
        if let queryStart { query = LinkURL.parseQuery(bytes[(queryStart + 1)..<end]) }
    }

    private static func find(_ bytes: ArraySlice<UInt8>, _ byte: UInt8, from start: Int) -> Int? {
        bytes[start...].firstIndex(of: byte)
    }

    static func parseQuery(_ text: ArraySlice<UInt8>) -> [QueryParameter] {
        var parameters: [QueryParameter] = []
        // Names seen, as bytes: a scan of the list per parameter was quadratic (a 32 KiB URL of
        // thousands of parameters took milliseconds, times 2,000 clicks a batch), and String's `==`
        // is Unicode-canonical, so a name in NFD was dropped as a repeat of its NFC twin although
        // PostgreSQL (jsonb keys) keeps both.
        var seen = Set<[UInt8]>()
        for pair in text.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: UInt8(ascii: "="))
            let name = percentDecode(pair[pair.startIndex..<(equals ?? pair.endIndex)])
            guard !name.isEmpty, seen.insert(Array(name.utf8)).inserted else { continue }
            let value = equals.map { percentDecode(pair[($0 + 1)..<pair.endIndex]) } ?? ""
            parameters.append(QueryParameter(name: name, value: value))
        }
        return parameters
    }

    /// Form decoding: `+` is a space, `%XX` a byte; invalid UTF-8 becomes U+FFFD.
    static func percentDecode(_ text: ArraySlice<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var i = text.startIndex
        while i < text.endIndex {
            let b = text[i]
            if b == UInt8(ascii: "%"), text.endIndex - i >= 3, let hi = hexValue(text[i + 1]),
                let lo = hexValue(text[i + 2])
            {
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(b == UInt8(ascii: "+") ? 0x20 : b)
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
