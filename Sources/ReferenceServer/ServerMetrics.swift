import ActivationServer
import Foundation
import PowerAuthProtocol
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What the reference server counts, rendered in the Prometheus text exposition format
/// (version 0.0.4) at `GET /metrics`.
///
/// Every label value comes from a closed set: the endpoint is one of the API's and back
/// office's paths (anything else is `other`), the factor set is one of PowerAuth's names. No
/// identifier, code, key or token ever becomes a label, so the page is safe to scrape and its
/// size does not grow with traffic.
///
/// | Metric | Type | Labels |
/// |---|---|---|
/// | `securepin_http_requests_total` | counter | `endpoint`, `status` |
/// | `securepin_http_request_duration_seconds` | histogram | `endpoint` |
/// | `securepin_verifications_total` | counter | `factors`, `outcome` (`accepted`, `rejected`) |
/// | `securepin_verification_failures_total` | counter | |
/// | `securepin_activation_blocks_total` | counter | `cause` (`failures`, `back_office`) |
/// | `securepin_store_errors_total` | counter | |
/// | `securepin_http_open_connections` | gauge | |
public final class ServerMetrics: Sendable {
    /// The upper bounds of the latency histogram's buckets, in seconds (`+Inf` is implied).
    public static let latencyBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private struct Histogram {
        var counts = [UInt64](repeating: 0, count: ServerMetrics.latencyBuckets.count)
        var sum = 0.0
        var count: UInt64 = 0

        /// Counts one observation in every bucket whose bound it does not exceed.
        mutating func add(_ seconds: Double, buckets: [Double]) {
            for (i, bound) in buckets.enumerated() where seconds <= bound { counts[i] += 1 }
            sum += seconds
            count += 1
        }

        /// Adds another histogram's counts (same buckets).
        mutating func merge(_ other: Histogram) {
            for i in counts.indices { counts[i] += other.counts[i] }
            sum += other.sum
            count += other.count
        }
    }

    private struct Key: Hashable, Comparable {
        var a: String
        var b: String
        static func < (l: Key, r: Key) -> Bool { (l.a, l.b) < (r.a, r.b) }
    }

    private struct State {
        var requests: [Key: UInt64] = [:]
        var latency: [String: Histogram] = [:]
        var verifications: [Key: UInt64] = [:]
        var failures: UInt64 = 0
        var blocks: [String: UInt64] = [:]
        var storeErrors: UInt64 = 0

        /// Adds another shard's counts.
        mutating func merge(_ other: State) {
            requests.merge(other.requests, uniquingKeysWith: +)
            latency.merge(other.latency) { mine, theirs in
                var sum = mine
                sum.merge(theirs)
                return sum
            }
            verifications.merge(other.verifications, uniquingKeysWith: +)
            failures += other.failures
            blocks.merge(other.blocks, uniquingKeysWith: +)
            storeErrors += other.storeErrors
        }
    }

    /// One lock and a part of the counts. Every request updates the counters, so they are kept
    /// in shards chosen by the calling thread: connection threads rarely wait for each other
    /// (one lock spun on by every request was 6% of the server's samples at 32 clients); the
    /// page adds the shards up.
    private final class Shard: Sendable {
        let state = Mutex(State())
    }

    private let shards = (0..<16).map { _ in Shard() }

    /// The calling thread's shard.
    private var shard: Shard {
        #if canImport(Glibc)
            let thread = UInt(pthread_self())
        #else
            let thread = UInt(bitPattern: pthread_self())
        #endif
        var hasher = Hasher()
        hasher.combine(thread)
        return shards[Int(UInt(bitPattern: hasher.finalize()) % UInt(shards.count))]
    }
    private let openConnections: Mutex<(@Sendable () -> Int)?> = Mutex(nil)

    /// Creates empty counters.
    public init() {}

    /// The endpoint label for a request path: the path itself when it is one the server
    /// serves, else `other`.
    /// - Parameter path: the request path.
    /// - Returns: the label value.
    public static func endpoint(for path: String) -> String {
        knownPaths.contains(path) ? path : "other"
    }

    static let knownPaths: Set<String> = [
        TemporaryKeyAPI.createKey.path, ActivationAPI.createActivation.path, ActivationAPI.activationStatus.path,
        ActivationAPI.validateSignature.path, ActivationAPI.removeActivation.path, ActivationAPI.unlockVault.path,
        ActivationAPI.createToken.path, ActivationAPI.removeToken.path, ActivationAPI.startUpgrade.path,
        ActivationAPI.commitUpgrade.path, ActivationAPI.userInfo.path, ActivationAPI.activationDetail.path,
        ActivationAPI.serverStatus.path, BackOfficeAPI.initActivation, BackOfficeAPI.commitActivation,
        BackOfficeAPI.blockActivation, BackOfficeAPI.unblockActivation, BackOfficeAPI.removeActivation,
        BackOfficeAPI.activationDetail, BackOfficeAPI.listActivations, BackOfficeAPI.configuration,
        BackOfficeAPI.vaultDetail, BackOfficeAPI.unblockVault, ServerMetrics.path,
    ]

    /// The path the metrics are served at.
    public static let path = "/metrics"

    /// Counts one answered request.
    /// - Parameters:
    ///   - endpoint: the label from ``endpoint(for:)``.
    ///   - status: the HTTP status sent.
    ///   - seconds: the time from the complete request to the response.
    public func recordRequest(endpoint: String, status: Int, seconds: Double) {
        let key = Key(a: endpoint, b: String(status))
        shard.state.withLock { state in
            state.requests[key, default: 0] += 1
            // Updated in place: a copy taken out of the dictionary would copy its counts (an
            // allocation under the lock every request takes).
            state.latency[endpoint, default: Histogram()].add(seconds, buckets: Self.latencyBuckets)
        }
    }

    /// Counts one verification of a PowerAuth authorization header.
    /// - Parameters:
    ///   - factors: the factor set the header claimed.
    ///   - accepted: whether it verified.
    public func recordVerification(factors: FactorSet, accepted: Bool) {
        shard.state.withLock {
            $0.verifications[Key(a: factors.rawValue, b: accepted ? "accepted" : "rejected"), default: 0] += 1
        }
    }

    /// Counts a failed attempt recorded against an activation, and the block it caused, if any.
    /// - Parameter blocked: whether this failure blocked the activation.
    func recordFailure(blocked: Bool) {
        shard.state.withLock { state in
            state.failures += 1
            if blocked { state.blocks["failures", default: 0] += 1 }
        }
    }

    /// Counts a block set through the back office.
    func recordBackOfficeBlock() {
        shard.state.withLock { $0.blocks["back_office", default: 0] += 1 }
    }

    /// Counts an error of the activation store.
    func recordStoreError() {
        shard.state.withLock { $0.storeErrors += 1 }
    }

    /// Where the open-connection gauge reads from (the HTTP server, once it exists).
    func readOpenConnections(from source: @escaping @Sendable () -> Int) {
        openConnections.withLock { $0 = source }
    }

    /// The whole page in the Prometheus text format.
    /// - Returns: the text, ending with a newline.
    public func render() -> String {
        let open = openConnections.withLock { $0 }?() ?? 0
        let state = shards.reduce(into: State()) { sum, shard in sum.merge(shard.state.withLock { $0 }) }
        var out: [String] = []
        func header(_ name: String, _ type: String, _ help: String) {
            out.append("# HELP \(name) \(help)")
            out.append("# TYPE \(name) \(type)")
        }
        header("securepin_http_requests_total", "counter", "HTTP requests answered, by endpoint and status.")
        for (key, value) in state.requests.sorted(by: { $0.key < $1.key }) {
            out.append("securepin_http_requests_total{endpoint=\"\(key.a)\",status=\"\(key.b)\"} \(value)")
        }
        header(
            "securepin_http_request_duration_seconds", "histogram",
            "Time from a complete request to its response, by endpoint.")
        for (endpoint, histogram) in state.latency.sorted(by: { $0.key < $1.key }) {
            let name = "securepin_http_request_duration_seconds"
            for (i, bound) in Self.latencyBuckets.enumerated() {
                out.append("\(name)_bucket{endpoint=\"\(endpoint)\",le=\"\(bound)\"} \(histogram.counts[i])")
            }
            out.append("\(name)_bucket{endpoint=\"\(endpoint)\",le=\"+Inf\"} \(histogram.count)")
            out.append("\(name)_sum{endpoint=\"\(endpoint)\"} \(histogram.sum)")
            out.append("\(name)_count{endpoint=\"\(endpoint)\"} \(histogram.count)")
        }
        header(
            "securepin_verifications_total", "counter",
            "PowerAuth authorization headers verified, by factor set and outcome.")
        for (key, value) in state.verifications.sorted(by: { $0.key < $1.key }) {
            out.append("securepin_verifications_total{factors=\"\(key.a)\",outcome=\"\(key.b)\"} \(value)")
        }
        header(
            "securepin_verification_failures_total", "counter", "Failed attempts counted against an activation.")
        out.append("securepin_verification_failures_total \(state.failures)")
        header("securepin_activation_blocks_total", "counter", "Activations blocked, by cause.")
        for cause in ["failures", "back_office"] {
            out.append("securepin_activation_blocks_total{cause=\"\(cause)\"} \(state.blocks[cause] ?? 0)")
        }
        header("securepin_store_errors_total", "counter", "Errors of the activation store (SQLite).")
        out.append("securepin_store_errors_total \(state.storeErrors)")
        header("securepin_http_open_connections", "gauge", "HTTP connections open now.")
        out.append("securepin_http_open_connections \(open)")
        return out.joined(separator: "\n") + "\n"
    }
}

/// A `ActivationServer.ServerActivationStore` that passes everything to the real one and counts, for
/// ``ServerMetrics``, the failed attempts, the blocks they cause and the store's errors.
struct ObservedStore: ServerActivationStore {
    let base: any ReferenceActivationStore
    let metrics: ServerMetrics

    var sharedEphemeralState: (any SharedEphemeralState)? { base.sharedEphemeralState }

    private func observe<R>(_ body: () throws(ActivationServerError) -> R) throws(ActivationServerError) -> R {
        do throws(ActivationServerError) {
            return try body()
        } catch {
            if case .storage = error { metrics.recordStoreError() }
            if case .unavailable = error { metrics.recordStoreError() }
            throw error
        }
    }

    func insert(_ record: ActivationRecord) throws(ActivationServerError) {
        try observe { () throws(ActivationServerError) in try base.insert(record) }
    }

    func fetch(activationId: String) throws(ActivationServerError) -> ActivationRecord? {
        try observe { () throws(ActivationServerError) in try base.fetch(activationId: activationId) }
    }

    func activationId(forCode activationCode: String) throws(ActivationServerError) -> String? {
        try observe { () throws(ActivationServerError) in try base.activationId(forCode: activationCode) }
    }

    func update<R: Sendable>(
        activationId: String, _ body: (inout ActivationRecord) throws(ActivationServerError) -> R
    ) throws(ActivationServerError) -> R {
        try observe { () throws(ActivationServerError) in try base.update(activationId: activationId, body) }
    }

    func recordAttempt(
        activationId: String, outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?
    ) throws(ActivationServerError) -> AttemptResult {
        let result = try observe { () throws(ActivationServerError) in
            try base.recordAttempt(
                activationId: activationId, outcome: outcome, now: now, failureBlockDuration: failureBlockDuration)
        }
        count(result, outcome)
        return result
    }

    var writesConditionally: Bool { base.writesConditionally }

    func recordAttemptIfUnchanged(
        activationId: String, outcome: AttemptOutcome, now: Date, failureBlockDuration: TimeInterval?,
        observed: ActivationRecord
    ) throws(ActivationServerError) -> AttemptResult? {
        let result = try observe { () throws(ActivationServerError) in
            try base.recordAttemptIfUnchanged(
                activationId: activationId, outcome: outcome, now: now, failureBlockDuration: failureBlockDuration,
                observed: observed)
        }
        if let result { count(result, outcome) }
        return result
    }

    private func count(_ result: AttemptResult, _ outcome: AttemptOutcome) {
        if !result.accepted, outcome != .rejectedUncounted {
            metrics.recordFailure(
                blocked: result.state == .blocked && result.failedAttempts >= result.maxFailedAttempts)
        }
    }

    func insertToken(_ token: TokenRecord) throws(ActivationServerError) {
        try observe { () throws(ActivationServerError) in try base.insertToken(token) }
    }

    func token(tokenId: String) throws(ActivationServerError) -> TokenRecord? {
        try observe { () throws(ActivationServerError) in try base.token(tokenId: tokenId) }
    }

    func removeToken(tokenId: String, activationId: String) throws(ActivationServerError) -> Bool {
        try observe { () throws(ActivationServerError) in
            try base.removeToken(tokenId: tokenId, activationId: activationId)
        }
    }
}
