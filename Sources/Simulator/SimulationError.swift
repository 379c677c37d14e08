internal import Glibc

/// Everything that can stop a simulation, with where it happened.
package enum SimulationError: Error, Equatable, CustomStringConvertible {
    /// The configuration cannot be run (a flag out of range, a period in the future).
    case invalidConfiguration(String)
    /// The target URL is not `http://host[:port]`.
    case invalidTarget(String)
    /// The target host name did not resolve.
    case resolve(host: String, message: String)
    /// A socket call failed.
    case io(call: String, errno: Int32)
    /// The server answered something that is not HTTP/1.1 as this client reads it.
    case badResponse(String)
    /// The server closed the connection before answering.
    case connectionClosed
    /// Writing the truth file failed.
    case truthFile(path: String, message: String)

    /// A description safe to print.
    package var description: String {
        switch self {
        case .invalidConfiguration(let message): "invalid simulation configuration: \(message)"
        case .invalidTarget(let target): "invalid target \(target): expected http://host[:port]"
        case .resolve(let host, let message): "cannot resolve \(host): \(message)"
        case .io(let call, let errno) where errno == EAGAIN:
            "\(call) timed out: no answer within the timeout, or before the deadline"
        case .io(let call, let errno): "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
        case .badResponse(let message): "unreadable HTTP response: \(message)"
        case .connectionClosed: "the server closed the connection before answering"
        case .truthFile(let path, let message): "cannot write truth file \(path): \(message)"
        }
    }
}
