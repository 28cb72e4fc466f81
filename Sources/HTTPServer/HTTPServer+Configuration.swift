extension HTTPServer {
    /// Where the server listens and the limits it enforces.
    public struct Configuration: Sendable {
        /// The IPv4 address to bind, dotted quad. Loopback unless deliberately changed.
        public var host: String
        /// The port to bind; 0 lets the kernel pick a free one (read it from ``HTTPServer/port``).
        public var port: UInt16
        /// The largest request body accepted. A request declaring a larger `Content-Length` is
        /// answered 413 before its body is read; a chunked body that grows past the limit stops
        /// being buffered, the rest is discarded (up to 1 MiB more, then the connection is cut)
        /// and the answer is 413.
        public var maximumBodyBytes: Int
        /// Seconds a connection may stay silent (while sending its request or idle between
        /// keep-alive requests) before it is closed. Must be at least 1.
        public var connectionTimeoutSeconds: Int
        /// The most simultaneous connections; each is served by its own thread. Further
        /// connections are accepted and closed at once.
        public var maximumConnections: Int
        /// The most simultaneous connections from one IP address (default 128, half the default total),
        /// so one client cannot take every slot; 0 turns the limit off.
        public var maximumConnectionsPerAddress: Int = 128
        /// Seconds a connection may take to deliver its whole request — request line, headers and
        /// body — counted from accept or from the end of its previous request, however slowly it
        /// trickles them (default 10); then it is shut down. The inactivity timeout alone is reset
        /// by every byte, which is what slowloris and slow-body clients rely on. 0 turns the
        /// deadline off. Besides, with ``maximumConnections`` of 64 or more, a new connection that
        /// arrives while all but an eighth of the slots are still waiting for their requests shuts
        /// down the one that has waited longest, so slow clients from many addresses cannot hold
        /// every slot (a smaller server keeps plain refusal at the limit).
        public var headerDeadlineSeconds: Int = 10
        /// Memory per connection for the request line and headers; larger headers get 431
        /// (libmicrohttpd answers this itself). At least 4 KiB.
        public var maximumHeaderBytes: Int
        /// How long ``HTTPServer/stop()`` waits for requests in flight before cutting them.
        public var drainTimeout: Duration
        /// Header names (compared without case) whose values are secrets, such as an admin
        /// token: their values go straight from the request into secure memory
        /// (``HTTPRequest/secretHeaders``) and never into a Swift `String`; they are absent
        /// from ``HTTPRequest/headers``. Default: none.
        public var secretHeaders: Set<String> = []

        /// Creates a configuration; every default suits a loopback test or reference server.
        /// - Parameters:
        ///   - host: IPv4 address to bind (default `127.0.0.1`).
        ///   - port: Port to bind (default 0, ephemeral).
        ///   - maximumBodyBytes: Body limit (default 64 KiB).
        ///   - connectionTimeoutSeconds: Inactivity timeout (default 10 s).
        ///   - maximumConnections: Connection limit (default 256).
        ///   - maximumHeaderBytes: Request line and header memory (default 32 KiB).
        ///   - drainTimeout: Graceful-stop wait (default 10 s).
        public init(
            host: String = "127.0.0.1", port: UInt16 = 0, maximumBodyBytes: Int = 64 * 1024,
            connectionTimeoutSeconds: Int = 10, maximumConnections: Int = 256, maximumHeaderBytes: Int = 32 * 1024,
            drainTimeout: Duration = .seconds(10)
        ) {
            self.host = host
            self.port = port
            self.maximumBodyBytes = maximumBodyBytes
            self.connectionTimeoutSeconds = connectionTimeoutSeconds
            self.maximumConnections = maximumConnections
            self.maximumHeaderBytes = maximumHeaderBytes
            self.drainTimeout = drainTimeout
        }
    }
}
