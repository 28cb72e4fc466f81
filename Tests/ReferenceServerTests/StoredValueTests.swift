import Activation
import ActivationServer
import Foundation
import PowerAuthProtocol
import ReferenceServer
import Testing

/// No value a back office can write, and no time an old database holds, may
/// crash an endpoint (security review M2: a `blockedUntil` near `Int64.max`
/// was stored and then trapped in `Int64(…)` on every status request, again
/// after a restart).
@Suite("Stored values never crash an endpoint")
struct StoredValueTests {
    @Test(
        "the back office refuses block ends outside now ... 9999-12-31 and accepts the rest",
        arguments: StoreBackend.available)
    func blockEndRange(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let (device, id) = try await s.activeDevice()
        let now = Int64(Date().timeIntervalSince1970)
        let refused: [Int64] = [
            .max, .max - 1, .min, -1, 0, 1, now - 10, UnixTime.latestSeconds + 1, 1 << 53, -(1 << 53),
        ]
        for value in refused {
            await #expect(throws: BackOfficeError.refused(status: 400, code: ActivationAPI.ErrorCode.request)) {
                try await s.backOffice.block(id, untilSeconds: value)
            }
            #expect(try await s.backOffice.detail(id).state == "ACTIVE")
        }
        for value in [now + 3600, UnixTime.latestSeconds] {
            try await s.backOffice.block(id, untilSeconds: value)
            let status = try await device.service.fetchActivationStatus()
            #expect(status.state == .blocked)
            #expect(status.blockExpirationTime.map { Int64($0.timeIntervalSince1970) } == value)
            #expect(try await s.backOffice.detail(id).blockedUntil == value)
            #expect(try await s.backOffice.list().first?.blockedUntil == value)
            try await s.backOffice.unblock(id)
        }
        print("StoredValueTests: \(refused.count) block ends refused, 2 accepted")
    }

    @Test("times already in the database, however extreme, are answered and clamped", arguments: StoreBackend.available)
    func extremeStoredTimes(_ backend: StoreBackend) async throws {
        let s = try InProcessServer(backend: backend)
        defer { s.server.stop() }
        let (device, id) = try await s.activeDevice()
        let extremes: [Double] = [
            9.3e18, Double(Int64.max), -9.3e18, 1e300, -1e300, .greatestFiniteMagnitude, 0, -1,
        ]
        for seconds in extremes {
            // As an older server version (or a hand-edited database) could have stored it.
            try s.server.store.update(activationId: id) { (r) throws(ActivationServerError) in
                r.state = .blocked
                r.blockedUntil = Date(timeIntervalSince1970: seconds)
            }
            let status = try await device.service.fetchActivationStatus()
            let detail = try await s.backOffice.detail(id)
            let listed = try await s.backOffice.list()
            let expected = UnixTime.seconds(Date(timeIntervalSince1970: seconds))
            #expect((0...UnixTime.latestSeconds).contains(expected))
            if seconds > Date().timeIntervalSince1970 {
                #expect(status.state == .blocked)
                #expect(detail.blockedUntil == expected)
                #expect(listed.first?.blockedUntil == expected)
            } else {
                // A block whose end has passed expires on the next read.
                #expect(status.state == .active)
            }
            try s.server.store.update(activationId: id) { (r) throws(ActivationServerError) in
                r.state = .active
                r.blockedUntil = nil
            }
        }
        print("StoredValueTests: \(extremes.count) stored times answered")
    }

    @Test("a failure block duration that is not finite or not 1 s ... 100 years is refused at start")
    func blockDurationConfiguration() throws {
        for duration in [TimeInterval.infinity, -.infinity, .nan, 0, -1, 0.5, 101 * 365.25 * 86_400] {
            #expect(throws: ActivationServerError.self) {
                _ = try ActivationServerConfiguration.generate(failureBlockDuration: duration)
            }
        }
        for duration in [1, 3600, 100 * 365.25 * 86_400] as [TimeInterval] {
            _ = try ActivationServerConfiguration.generate(failureBlockDuration: duration)
        }
    }

    @Test func conversionClampsEverything() {
        #expect(UnixTime.seconds(Date(timeIntervalSince1970: .nan)) == 0)
        #expect(UnixTime.seconds(Date(timeIntervalSince1970: .infinity)) == UnixTime.latestSeconds)
        #expect(UnixTime.seconds(Date(timeIntervalSince1970: -.infinity)) == 0)
        #expect(UnixTime.seconds(Date(timeIntervalSince1970: 1_700_000_000.9)) == 1_700_000_000)
        #expect(UnixTime.seconds(Date.distantFuture) == min(UnixTime.latestSeconds, 64_092_211_200))
    }
}
