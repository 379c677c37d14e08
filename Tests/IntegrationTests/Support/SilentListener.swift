import Foundation
import Glibc

/// A TCP listener on 127.0.0.1 that never accepts: the kernel completes a client's handshake, and
/// nobody ever answers (a server that hangs, a "PostgreSQL" that takes the connection and never
/// says a word). Closed by `close()` or when released.
final class SilentListener {
    let descriptor: Int32
    let port: UInt16

    struct Failure: Error {}

    /// Binds an ephemeral port with room for `backlog` waiting connections.
    init(backlog: Int32) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure() }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, backlog) == 0
                    && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(fd)
            throw Failure()
        }
        descriptor = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    private var isClosed = false

    /// Closes the listener now: the connections waiting in its backlog are reset.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(descriptor)
    }

    deinit { close() }
}
