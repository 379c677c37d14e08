import Foundation

/// Binds and listens on an IPv4 address before libmicrohttpd starts, so the bound port is known
/// from `getsockname` even for port 0. (libmicrohttpd reports it through the variadic
/// `MHD_get_daemon_info`, which Swift cannot call.) `Acceptor` accepts on it and hands the
/// connections to libmicrohttpd; `HTTPServer` closes it after the daemon has stopped.
enum ListeningSocket {
    /// Returns the listening descriptor and the port it is bound to.
    static func open(host: String, port: UInt16, backlog: Int32) throws(HTTPServerError) -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            let code = errno
            throw .socket(call: "socket", address: "\(host):\(port)", errno: code)
        }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(fd)
            throw .socket(call: "inet_pton", address: "\(host):\(port)", errno: EINVAL)
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw .socket(call: "bind", address: "\(host):\(port)", errno: code)
        }
        guard listen(fd, backlog) == 0 else {
            let code = errno
            close(fd)
            throw .socket(call: "listen", address: "\(host):\(port)", errno: code)
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: actual.sin_port))
    }
}

/// Why the HTTP server could not start.
package enum HTTPServerError: Error, CustomStringConvertible {
    /// A socket call for `address` (`host:port`) failed with `errno`.
    case socket(call: String, address: String, errno: Int32)
    /// libmicrohttpd refused to start (bad option combination or resources).
    case daemonStartFailed

    /// A message naming the problem, safe to log.
    package var description: String {
        switch self {
        case .socket(let call, let address, let code):
            // The address, so "Address already in use" says which one (another instance, or a typo).
            "http server: \(call) \(address) failed: \(String(cString: strerror(code)))"
        case .daemonStartFailed: "http server: libmicrohttpd did not start"
        }
    }
}
