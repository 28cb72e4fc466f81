import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How fast one client address may call the endpoints that need no credential and make the
/// server do public-key work: `keystore/create` (V3.3 and V4) and the vault binding's `register`.
///
/// A token bucket per address: ``burst`` requests at once, refilled at ``perSecond``. An IPv6
/// address counts by its /64 prefix (one host usually holds a whole /64). The address is
/// `HTTPRequest.clientAddress`: behind a proxy listed in
/// `HTTPServer.Configuration.trustedProxies`, the client the proxy names in `X-Forwarded-For`;
/// behind any other proxy, the proxy's own, shared by all its clients.
public struct AddressRateLimit: Sendable, Equatable {
    /// Requests an address may make at once (default 64).
    public var burst: Int
    /// Requests per second an address regains (default 8).
    public var perSecond: Double

    /// Creates a limit.
    /// - Parameters:
    ///   - burst: at least 1.
    ///   - perSecond: more than 0.
    public init(burst: Int = 64, perSecond: Double = 8) {
        self.burst = burst
        self.perSecond = perSecond
    }
}

/// Token buckets by client address, in bounded memory.
///
/// At most `capacity` addresses are tracked. When the table is full, buckets that have refilled
/// completely are forgotten first (forgetting them changes nothing); if none has, the half touched
/// longest ago goes, so an attacker with more addresses than the table holds regains at most a
/// burst per forgotten address, while memory stays fixed.
final class AddressRateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    let limit: AddressRateLimit
    let capacity: Int
    private let buckets = Mutex([String: Bucket]())
    private let clock: @Sendable () -> Double

    /// - Parameters:
    ///   - limit: the per-address limit.
    ///   - capacity: most addresses tracked.
    ///   - clock: monotonic seconds.
    init(
        limit: AddressRateLimit, capacity: Int = 16_384,
        clock: @escaping @Sendable () -> Double = { AddressRateLimiter.monotonicSeconds() }
    ) {
        self.limit = AddressRateLimit(burst: max(1, limit.burst), perSecond: max(limit.perSecond, 0.001))
        self.capacity = max(1, capacity)
        self.clock = clock
    }

    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// The key an address counts under: IPv4 as is, IPv6 by its /64 prefix.
    static func key(_ address: String?) -> String {
        guard let address, !address.isEmpty else { return "unknown" }
        guard address.contains(":") else { return address }
        var raw = in6_addr()
        guard inet_pton(AF_INET6, address, &raw) == 1 else { return address }
        let prefix = withUnsafeBytes(of: &raw) { Array($0.prefix(8)) }
        return prefix.map { String(format: "%02x", $0) }.joined() + "/64"
    }

    /// Takes one token for `address`.
    /// - Parameter address: the client's address (`nil`: unknown, one shared bucket).
    /// - Returns: `nil` when allowed, else the whole seconds until a token is back.
    func take(_ address: String?) -> Int? {
        let key = Self.key(address)
        let now = clock()
        let burst = Double(limit.burst)
        let rate = limit.perSecond
        return buckets.withLock { table -> Int? in
            var bucket = table[key] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.updated) * rate)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                table[key] = bucket
                return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
            }
            bucket.tokens -= 1
            if table[key] == nil, table.count >= capacity {
                table = table.filter { $0.value.tokens + max(0, now - $0.value.updated) * rate < burst }
                if table.count >= capacity {
                    let cut = table.values.map(\.updated).sorted()[table.count / 2]
                    table = table.filter { $0.value.updated > cut }
                }
            }
            table[key] = bucket
            return nil
        }
    }

    /// Addresses tracked now.
    var count: Int { buckets.withLock { $0.count } }
}
