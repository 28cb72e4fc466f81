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
