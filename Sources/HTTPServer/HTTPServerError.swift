#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Everything that can go wrong when starting an ``HTTPServer``. Once running, the
/// server answers every problem in a request with an HTTP status instead of an error.
public enum HTTPServerError: Error, Equatable, Sendable {
    /// ``HTTPServer/Configuration/host`` is not a dotted-quad IPv4 address.
    case invalidAddress(String)
    /// A limit in the configuration is out of range; the text names it.
    case invalidConfiguration(String)
    /// ``HTTPServer/start()`` was called on a server that is already running.
    case alreadyRunning
    /// libmicrohttpd could not start (`MHD_start_daemon` failed); `errno` is what it
    /// left, for example `EADDRINUSE` when the port is taken.
    case startFailed(errno: Int32)
    /// Memory for the server could not be allocated.
    case outOfMemory
}

extension HTTPServerError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on.
    public var description: String {
        switch self {
        case .invalidAddress(let host): "cannot listen on \(host): not an IPv4 or IPv6 address"
        case .invalidConfiguration(let reason): "the HTTP server cannot be used as configured: \(reason)"
        case .alreadyRunning: "the HTTP server is already running"
        case .startFailed(let code): "the HTTP server could not start: \(String(cString: strerror(code)))"
        case .outOfMemory: "out of memory for the HTTP server"
        }
    }
}
