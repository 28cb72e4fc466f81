import Foundation
import Synchronization

/// An HTTP/1.1 server on GNU libmicrohttpd, bound to loopback by default.
///
/// Each connection is served by its own thread (up to
/// ``Configuration/maximumConnections``), so the handler is called concurrently and
/// may block. The request body is collected up to ``Configuration/maximumBodyBytes``
/// before the handler runs; malformed HTTP is answered 400 by libmicrohttpd without
/// reaching the handler. Nothing is logged.
///
/// ```swift
/// let server = HTTPServer(configuration: .init()) { request in
///     request.path == "/ping" ? .text(status: 200, "pong") : .text(status: 404, "")
/// }
/// try server.start()
/// print(server.port!)           // the ephemeral port
/// server.stop()                 // stop accepting, finish in-flight requests (or: await server.shutdown())
/// ```
public final class HTTPServer: Sendable {
    /// The configuration given at creation.
    public let configuration: Configuration
    private let box: HandlerBox
    /// One running daemon per listener, in ``Configuration/listeners`` order; nil when stopped.
    private let daemon = Mutex<[RunningDaemon]?>(nil)

    /// Creates a stopped server.
    /// - Parameters:
    ///   - configuration: Address and limits.
    ///   - handler: Called once per complete request, on the connection's thread, possibly
    ///     concurrently with itself. It must not log header values or bodies.
    public init(
        configuration: Configuration = Configuration(), handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) {
        self.configuration = configuration
        self.box = HandlerBox(
            handler, secretHeaders: configuration.secretHeaders, trustedProxies: configuration.trustedProxies,
            perClientLimit: configuration.maximumConnectionsPerAddress)
    }

    deinit {
        for running in daemon.withLock({ $0.take() }) ?? [] { _ = ShimBridge.stop(running, drainTimeout: .zero) }
    }

    /// Binds every listener and starts serving (`MHD_start_daemon`, one per listener). If one
    /// cannot bind, those already started are stopped and the error is thrown. A stopped server
    /// may be started again; with port 0 it gets a new ephemeral port.
    /// - Throws: ``HTTPServerError/alreadyRunning``, ``HTTPServerError/invalidAddress(_:)``,
    ///   ``HTTPServerError/invalidConfiguration(_:)``, ``HTTPServerError/startFailed(errno:)``
    ///   or ``HTTPServerError/outOfMemory``.
    public func start() throws(HTTPServerError) {
        try daemon.withLock { (running: inout [RunningDaemon]?) throws(HTTPServerError) in
            guard running == nil else { throw .alreadyRunning }
            try ShimBridge.validate(configuration)
            var started: [RunningDaemon] = []
            for listener in configuration.listeners {
                do throws(HTTPServerError) {
                    started.append(try ShimBridge.start(configuration, listener: listener, box: box))
                } catch {
                    for daemon in started { _ = ShimBridge.stop(daemon, drainTimeout: .zero) }
                    throw error
                }
            }
            running = started
        }
    }

    /// The first listener's bound port while running (the kernel's choice when
    /// ``Configuration/port`` is 0), else nil.
    public var port: Int? { daemon.withLock { $0?.first?.port } }

    /// Every listener's bound port while running, in ``Configuration/listeners`` order; empty
    /// when stopped.
    public var ports: [Int] { daemon.withLock { $0?.map(\.port) ?? [] } }

    /// Whether the server is running.
    public var isRunning: Bool { daemon.withLock { $0 != nil } }

    /// Requests between their headers and the end of their response, now, over every listener
    /// (0 when stopped).
    public var requestsInFlight: Int { daemon.withLock { ($0 ?? []).reduce(0) { $0 + ShimBridge.inFlight($1) } } }

    /// Connections open now, idle keep-alive ones included, over every listener (0 when stopped).
    public var openConnections: Int {
        daemon.withLock { ($0 ?? []).reduce(0) { $0 + ShimBridge.openConnections($1) } }
    }

    /// Stops gracefully: no new connections are accepted, requests in flight get up to
    /// ``Configuration/drainTimeout`` to finish (their responses say `Connection: close`),
    /// then idle connections are closed and every thread is joined (`MHD_stop_daemon`).
    /// Blocks until done. Does nothing when the server is not running.
    /// - Returns: The number of requests still unfinished when the drain timeout ran out
    ///   (0 after a clean drain).
    @discardableResult
    public func stop() -> Int {
        guard let running = daemon.withLock({ $0.take() }) else { return 0 }
        // Every listener stops accepting before any drain starts, so none takes new work while
        // another drains; then each drains within the one timeout.
        let deadline = ContinuousClock.now + configuration.drainTimeout
        for daemon in running { ShimBridge.quiesce(daemon) }
        return running.reduce(0) { cut, daemon in
            cut + ShimBridge.stop(daemon, drainTimeout: max(.zero, ContinuousClock.now.duration(to: deadline)))
        }
    }

    /// ``stop()`` for async code: the blocking drain runs on a thread of its own, so no
    /// thread of Swift's cooperative pool waits for it.
    /// - Returns: The number of requests still unfinished when the drain timeout ran out.
    @discardableResult
    public func shutdown() async -> Int {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            Thread { continuation.resume(returning: self.stop()) }.start()
        }
    }
}
