import Foundation
import HTTPClient
import SecureCore
import Synchronization
import Testing

@testable import ReferenceServer

/// The back office's token (security review L4): at least 128 bits, compared
/// in constant time on a fixed-size digest, never in a Swift `String` on the
/// server, and failed attempts rate-limited.
@Suite("Admin token")
struct AdminTokenTests {
    static let token = "0123456789abcdef0123456789abcdef"
    static let list = (path: "/admin/activation/list", body: Data("{\"requestObject\":{}}".utf8))

    @Test("tokens under 32 characters are refused, from text and at server start")
    func minimumLength() throws {
        for length in [1, 8, 16, 31] {
            #expect(throws: ReferenceServerError.self) {
                _ = try AdminToken.copying(String(repeating: "a", count: length))
            }
        }
        _ = try AdminToken.copying(String(repeating: "a", count: 32))
        let short = try SecureBytes.random(count: 16)
        #expect(throws: ReferenceServerError.self) {
            _ = try InProcessServer(adminToken: short)
        }
    }

    @Test("unprintable tokens are refused")
    func printable() {
        for text in [String(repeating: "a", count: 31) + " ", String(repeating: "é", count: 20)] {
            #expect(throws: ReferenceServerError.self) { _ = try AdminToken.copying(text) }
        }
    }

    @Test("right, wrong, missing, and then rate-limited")
    func verdictsAndRateLimit() async throws {
        // A refill slower than any test run: the count is exact however loaded the machine is.
        let s = try InProcessServer(
            adminToken: try AdminToken.copying(Self.token),
            adminRateLimit: AdminRateLimit(burst: 10, refillInterval: .seconds(3600)))
        defer { s.server.stop() }
        let client = try s.rawClient()
        func post(_ token: String?) async throws -> (Int, String) {
            let (status, body) = try await client.post(
                path: Self.list.path, body: Self.list.body,
                headers: token.map { ["X-SecurePIN-Admin-Token": $0] } ?? [:])
            return (status, String(decoding: body, as: UTF8.self))
        }
        #expect(try await post(Self.token).0 == 200)
        // A wrong token of the same length, a longer one, a prefix: all 403.
        #expect(try await post(String(Self.token.reversed())).0 == 403)
        #expect(try await post(Self.token + "0").0 == 403)
        #expect(try await post(String(Self.token.prefix(31))).0 == 403)
        #expect(try await post(nil).0 == 401)
        // Six more failures use up the burst of ten; then even the right token waits.
        for _ in 0..<6 { #expect(try await post("wrong-token-wrong-token-wrong-token").0 == 403) }
        let (limited, message) = try await post(Self.token)
        #expect(limited == 429)
        #expect(message.contains("retry in"))
    }

    @Test("the budget refills at one attempt per interval and says how long to wait")
    func refill() throws {
        let start = ContinuousClock.now
        let offset = Mutex(Duration.zero)
        let gate = try AdminGate(
            token: try AdminToken.copying(Self.token), limit: AdminRateLimit(burst: 3, refillInterval: .seconds(2)),
            now: { start + offset.withLock { $0 } })
        let right = try AdminToken.copying(Self.token)
        let wrong = try AdminToken.copying(String(repeating: "x", count: 32))
        #expect(gate.check(right) == .allowed)
        #expect(gate.check(wrong) == .refused)
        #expect(gate.check(nil) == .missing)
        #expect(gate.check(wrong) == .refused)
        #expect(gate.check(right) == .limited(retryAfterSeconds: 2))
        offset.withLock { $0 = .seconds(1) }
        #expect(gate.check(right) == .limited(retryAfterSeconds: 1))
        offset.withLock { $0 = .seconds(2) }
        #expect(gate.check(right) == .allowed, "a right token costs nothing")
        #expect(gate.check(wrong) == .refused)
        #expect(gate.check(right) == .limited(retryAfterSeconds: 2))
    }
}
