import Foundation
import HTTPClient
import ReferenceServer
import SecureCore
import Testing

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
        let s = try InProcessServer(adminToken: try AdminToken.copying(Self.token))
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
        // One attempt comes back per second.
        try await Task.sleep(for: .milliseconds(1300))
        #expect(try await post(Self.token).0 == 200)
    }
}
