import Foundation
import Synchronization
import Testing

@testable import ReferenceServer

@Suite("Per-address limits on the unauthenticated key requests")
struct AddressRateLimiterTests {
    /// A clock the test moves.
    final class ManualClock: Sendable {
        let seconds = Mutex(0.0)
        func advance(_ by: Double) { seconds.withLock { $0 += by } }
        var now: Double { seconds.withLock { $0 } }
    }

    @Test("a burst, then refusals with the seconds to wait; the refill; other addresses untouched")
    func burstAndRefill() {
        let clock = ManualClock()
        let limiter = AddressRateLimiter(limit: AddressRateLimit(burst: 3, perSecond: 0.5), clock: { clock.now })
        for _ in 0..<3 { #expect(limiter.take("10.0.0.1") == nil) }
        #expect(limiter.take("10.0.0.1") == 2)
        #expect(limiter.take("10.0.0.2") == nil)
        clock.advance(2)
        #expect(limiter.take("10.0.0.1") == nil)
        #expect(limiter.take("10.0.0.1") != nil)
        // Unknown addresses share one bucket.
        for _ in 0..<3 { #expect(limiter.take(nil) == nil) }
        #expect(limiter.take("") != nil)
    }

    @Test("IPv6 counts by /64: two hosts of one prefix share a bucket, another prefix has its own")
    func ipv6Prefix() {
        #expect(AddressRateLimiter.key("2001:db8:1:2::5") == AddressRateLimiter.key("2001:db8:1:2:ffff::9"))
        #expect(AddressRateLimiter.key("2001:db8:1:2::5") != AddressRateLimiter.key("2001:db8:1:3::5"))
        #expect(AddressRateLimiter.key("2001:db8:1:2::5") == "20010db800010002/64")
        #expect(AddressRateLimiter.key("127.0.0.1") == "127.0.0.1")
        #expect(AddressRateLimiter.key("not:an:address::x") == "not:an:address::x")
    }

    @Test("the table stays within its capacity whatever number of addresses arrives")
    func boundedTable() {
        let clock = ManualClock()
        let limiter = AddressRateLimiter(
            limit: AddressRateLimit(burst: 2, perSecond: 1), capacity: 64, clock: { clock.now })
        for index in 0..<10_000 {
            _ = limiter.take("10.\(index >> 16).\((index >> 8) & 0xFF).\(index & 0xFF)")
            clock.advance(0.001)
        }
        #expect(limiter.count <= 64)
    }
}
