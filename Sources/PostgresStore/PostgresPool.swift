import Dispatch
import SecureCore
import Synchronization

/// A bounded pool of ``PostgresConnection``s to one database, shared by every thread of a
/// server process.
///
/// - A connection is made on demand, up to ``Configuration/maximumConnections``; a caller that
///   finds all of them busy waits up to ``Configuration/acquireTimeoutSeconds`` and then gets
///   ``PostgresError/unavailable(reason:)``.
/// - A connection that broke (the server restarted) or was left inside a transaction is closed
///   instead of being returned, so the next caller connects afresh: that is how the pool
///   reconnects after the database comes back.
/// - ``transaction(_:)`` retries only a failed `BEGIN` (nothing was sent yet); a statement or a
///   `COMMIT` that failed is never repeated, so an attempt is counted at most once.
public final class PostgresPool: Sendable {
    /// The pool's limits.
    public struct Configuration: Sendable {
        /// Most open connections.
        public var maximumConnections: Int
        /// How long a caller waits for a free connection.
        public var acquireTimeoutSeconds: Double
        /// libpq's `connect_timeout`.
        public var connectTimeoutSeconds: Int
        /// `statement_timeout` and `lock_timeout` of every session, in milliseconds.
        public var statementTimeoutMilliseconds: Int

        /// Creates the limits (defaults: 16 connections, 5 s to acquire, 5 s to connect, 5 s per statement).
        /// - Parameters:
        ///   - maximumConnections: most open connections.
        ///   - acquireTimeoutSeconds: the wait for a free connection.
        ///   - connectTimeoutSeconds: the connect timeout.
        ///   - statementTimeoutMilliseconds: the statement and lock timeout.
        public init(
            maximumConnections: Int = 16, acquireTimeoutSeconds: Double = 5, connectTimeoutSeconds: Int = 5,
            statementTimeoutMilliseconds: Int = 5000
        ) {
            self.maximumConnections = maximumConnections
            self.acquireTimeoutSeconds = acquireTimeoutSeconds
            self.connectTimeoutSeconds = connectTimeoutSeconds
            self.statementTimeoutMilliseconds = statementTimeoutMilliseconds
        }
    }

    /// The limits.
    public let configuration: Configuration
    private let connectionString: SecureBytes
    private let idle = Mutex([PostgresConnection]())
    private let slots: DispatchSemaphore

    /// Creates a pool; no connection is made before the first use.
    /// - Parameters:
    ///   - connectionString: the DSN in secure memory (the pool keeps its own NUL-terminated copy).
    ///   - configuration: the limits.
    /// - Throws: ``PostgresError/invalidConnectionString`` for an empty DSN, one with a NUL byte,
    ///   or one that cannot be copied into secure memory.
    public init(connectionString: SecureBytes, configuration: Configuration = Configuration())
        throws(PostgresError)
    {
        precondition(configuration.maximumConnections > 0, "a pool needs at least one connection")
        let valid = connectionString.withUnsafeBytes { bytes in bytes.count > 0 && !bytes.contains(0) }
        guard valid, let copy = try? SecureBytes(count: connectionString.count + 1) else {
            throw .invalidConnectionString
        }
        copy.withUnsafeMutableBytes { target in
            connectionString.withUnsafeBytes { source in
                target.baseAddress?.copyMemory(from: source.baseAddress!, byteCount: source.count)
            }
            target[connectionString.count] = 0
        }
        self.connectionString = copy
        self.configuration = configuration
        slots = DispatchSemaphore(value: configuration.maximumConnections)
    }

    /// Runs `body` on a connection of the pool. A read-only `body` (`idempotent`) that fails
    /// because a pooled connection had gone stale runs once more on a fresh connection.
    /// - Parameters:
    ///   - idempotent: whether `body` may safely run twice (it changes nothing).
    ///   - body: the work.
    /// - Returns: what `body` returned.
    /// - Throws: ``PostgresError``.
    public func withConnection<R>(
        idempotent: Bool = false, _ body: (PostgresConnection) throws(PostgresError) -> R
    ) throws(PostgresError) -> R {
        try run(mayRetry: { idempotent }, body)
    }

    /// Runs `body` in one transaction (`BEGIN` … `COMMIT`; `ROLLBACK` when `body` throws).
    /// A `BEGIN` that fails on a stale pooled connection is retried once on a fresh one; a
    /// failed `COMMIT` is reported, never repeated.
    /// - Parameter body: the work, given the transaction's connection.
    /// - Returns: what `body` returned.
    /// - Throws: ``PostgresError``, or what `body` throws.
    public func transaction<R>(_ body: (PostgresConnection) throws(PostgresError) -> R) throws(PostgresError) -> R {
        var began = false
        return try run(mayRetry: { !began }) { (connection) throws(PostgresError) -> R in
            try connection.execute("BEGIN")
            began = true
            let result: R
            do throws(PostgresError) {
                result = try body(connection)
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
            try connection.execute("COMMIT")
            return result
        }
    }

    /// Takes a connection, runs `body`, and gives the connection back (or drops it when broken).
    /// When `body` fails with ``PostgresError/unavailable(reason:)`` on a connection that came
    /// from the idle list and `mayRetry()` says so, it runs once more on a fresh connection.
    private func run<R>(mayRetry: () -> Bool, _ body: (PostgresConnection) throws(PostgresError) -> R)
        throws(PostgresError) -> R
    {
        guard slots.wait(timeout: .now() + configuration.acquireTimeoutSeconds) == .success else {
            throw .unavailable(reason: "no free database connection")
        }
        defer { slots.signal() }
        var (connection, pooled) = try take()
        while true {
            do throws(PostgresError) {
                let result = try body(connection)
                give(back: connection)
                return result
            } catch {
                if case .unavailable = error, pooled, mayRetry() {
                    // The pooled connection had died with the server; one more try on a new one.
                    (connection, pooled) = (try connect(), false)
                    continue
                }
                give(back: connection)
                throw error
            }
        }
    }

    /// Closes every idle connection (busy ones close when they come back broken or at `deinit`).
    public func closeIdle() {
        idle.withLock { $0.removeAll() }
    }

    /// An idle connection that still looks alive (``PostgresConnection/isAlive``; dead ones are
    /// dropped), or a new one.
    private func take() throws(PostgresError) -> (PostgresConnection, Bool) {
        while let connection = idle.withLock({ $0.popLast() }) {
            if connection.isAlive { return (connection, true) }
        }
        return (try connect(), false)
    }

    private func connect() throws(PostgresError) -> PostgresConnection {
        try PostgresConnection(
            connectionString: connectionString, connectTimeoutSeconds: configuration.connectTimeoutSeconds,
            statementTimeoutMilliseconds: configuration.statementTimeoutMilliseconds)
    }

    private func give(back connection: PostgresConnection) {
        guard connection.isReusable else { return }
        idle.withLock { $0.append(connection) }
    }
}
