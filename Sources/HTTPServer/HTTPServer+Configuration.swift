extension HTTPServer {
    /// Where the server listens and the limits it enforces.
    public struct Configuration: Sendable {
        /// The address of the first listener: an IPv4 address (dotted quad) or an IPv6 one
        /// (without brackets). Loopback unless deliberately changed.
        public var host: String
        /// The port of the first listener; 0 lets the kernel pick a free one (read it from
        /// ``HTTPServer/port``).
        public var port: UInt16
        /// More addresses to listen on, beside ``host``:``port``. Each listener is its own
        /// libmicrohttpd daemon with the limits below (``maximumConnections`` and the
        /// per-address limit count per listener); the handler is shared. Default: none.
        public var additionalListeners: [Listener] = []
        /// Reverse proxies whose connections may name the client: for a connection from an
        /// address in one of these networks, ``HTTPRequest/clientAddress`` is taken from its
        /// `X-Forwarded-For` header (the right-most entry that is not itself a trusted proxy).
        /// Their connections are exempt from ``maximumConnectionsPerAddress``; instead each
        /// forwarded client may have at most that many requests in flight (429 beyond). From any
        /// other address `X-Forwarded-For` is ignored. Default: none.
        public var trustedProxies: [IPNetwork] = []
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

        /// Every listener: ``host``:``port`` first, then ``additionalListeners``.
        public var listeners: [Listener] { [Listener(host: host, port: port)] + additionalListeners }
    }

    /// One address and port to listen on.
    public struct Listener: Sendable, Hashable, CustomStringConvertible {
        /// An IPv4 address (dotted quad) or an IPv6 one (without brackets).
        public var host: String
        /// The port; 0 lets the kernel pick one.
        public var port: UInt16

        /// Creates a listener.
        /// - Parameters:
        ///   - host: the address to bind.
        ///   - port: the port.
        public init(host: String, port: UInt16) {
            self.host = host
            self.port = port
        }

        /// Why a listen address did not parse.
        public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
            /// The text given.
            public let text: String
            /// A sentence saying what is wrong.
            public var description: String {
                "\"\(text)\" is not a listen address: give IPV4:PORT or [IPV6]:PORT, such as 127.0.0.1:8080 or [::1]:8080"
            }
        }

        /// Parses `IPV4:PORT` or `[IPV6]:PORT`.
        /// - Parameter text: for example `0.0.0.0:8080` or `[::]:8443`.
        /// - Throws: ``ParseError`` for a missing or out-of-range port, an address that is not
        ///   numeric (no host names: what is bound must be what was checked), or an IPv6 address
        ///   without brackets.
        public init(parsing text: String) throws(ParseError) {
            let host: Substring
            let portText: Substring
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                    throw ParseError(text: text)
                }
                host = text[text.index(after: text.startIndex)..<close]
                portText = text[text.index(close, offsetBy: 2)...]
                guard let parsed = IPNetwork.parseAddress(String(host)), parsed.ipv6 else {
                    throw ParseError(text: text)
                }
            } else {
                guard let colon = text.lastIndex(of: ":") else { throw ParseError(text: text) }
                host = text[..<colon]
                portText = text[text.index(after: colon)...]
                guard let parsed = IPNetwork.parseAddress(String(host)), !parsed.ipv6 else {
                    throw ParseError(text: text)
                }
            }
            guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
                let port = UInt16(portText)
            else { throw ParseError(text: text) }
            self.init(host: String(host), port: port)
        }

        /// Whether the address is a loopback one (`127.0.0.0/8` or `::1`).
        public var isLoopback: Bool {
            guard let parsed = IPNetwork.parseAddress(host) else { return false }
            return parsed.ipv6 ? parsed.bytes == Array(repeating: 0, count: 15) + [1] : parsed.bytes[0] == 127
        }

        /// `HOST:PORT`, the IPv6 address in brackets.
        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }
}
