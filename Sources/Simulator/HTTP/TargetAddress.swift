internal import Glibc

/// The server to send to: `http://host[:port]`, resolved once to a socket address.
struct TargetAddress: @unchecked Sendable {
    // @unchecked: `storage` is a plain value copied out of getaddrinfo and never mutated after init.
    let host: String
    let port: UInt16
    let family: Int32
    let storage: sockaddr_storage
    let length: socklen_t

    /// The `Host` header value.
    var hostHeader: String { "\(host):\(port)" }

    /// Parses and resolves a target URL.
    /// - Throws: `SimulationError.invalidTarget` or `.resolve`.
    init(url: String) throws(SimulationError) {
        guard url.hasPrefix("http://") else { throw .invalidTarget(url) }
        var rest = url.dropFirst("http://".count)
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        var host = String(rest)
        var port: UInt16 = 80
        if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
            guard let parsed = UInt16(rest[rest.index(after: colon)...]) else { throw .invalidTarget(url) }
            port = parsed
            host = String(rest[..<colon])
        }
        host = host.trimmingBrackets()
        guard !host.isEmpty else { throw .invalidTarget(url) }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let info = result else {
            throw .resolve(host: host, message: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(result) }
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { target in
            target.copyMemory(
                from: UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: Int(info.pointee.ai_addrlen)))
        }
        self.host = host
        self.port = port
        self.family = info.pointee.ai_family
        self.storage = storage
        self.length = info.pointee.ai_addrlen
    }
}

extension String {
    fileprivate func trimmingBrackets() -> String {
        hasPrefix("[") && hasSuffix("]") ? String(dropFirst().dropLast()) : self
    }
}
