import Activation
import ActivationServer
import ActivationTestSupport
import Foundation
import PowerAuthProtocol
import Synchronization
import Testing

@Suite("The status's customObject: any JSON object, bounded, on every suite")
struct StatusCustomObjectTests {
    /// What a PowerAuth server's callbacks may put there: every kind of JSON value.
    static let rich: [String: JSONValue] = [
        "name": .string("Alice \u{201C}A\u{201D} / <b>&</b> ="),
        "limit": .number(2500.75),
        "count": .number(42),
        "flags": .array([.bool(true), .bool(false), .null]),
        "nested": .object(["level": .object(["deeper": .array([.string("x"), .number(-1)])])]),
        "empty": .object([:]),
    ]

    @Test("a rich customObject arrives as the server sent it", arguments: ProtocolAlgorithm.allCases)
    func rich(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm) { _, user in user == "alice" ? Self.rich : nil }
        let service = try h.makeService()
        try await h.activate(service)
        let status = try await service.fetchActivationStatus()
        #expect(status.state == .active)
        #expect(status.customObject == Self.rich)
        #expect(status.blockExpirationTime == nil)
    }

    @Test(
        "a temporary block's end joins the application's values and overrides a member of its name",
        arguments: ProtocolAlgorithm.allCases)
    func blockEnd(algorithm: ProtocolAlgorithm) async throws {
        let h = try Harness(algorithm: algorithm) { _, _ in
            ["blockExpirationTime": .string("not ours"), "tier": .string("gold")]
        }
        let service = try h.makeService()
        let id = try await h.activate(service)
        let until = Date(timeIntervalSince1970: (h.clock.now().timeIntervalSince1970 + 600).rounded(.down))
        try h.server.blockActivation(id, until: until)
        let status = try await service.fetchActivationStatus()
        #expect(status.state == .blocked && status.blockExpirationTime == until)
        #expect(
            status.customObject
                == ["blockExpirationTime": .number(until.timeIntervalSince1970), "tier": .string("gold")])
    }

    @Test(
        "too deep or too large is a typed error that changes nothing; within the bounds it works",
        arguments: ProtocolAlgorithm.allCases)
    func bounds(algorithm: ProtocolAlgorithm) async throws {
        let oversize = Mutex<[String: JSONValue]?>(nil)
        let h = try Harness(algorithm: algorithm) { _, _ in oversize.withLock { $0 } }
        let service = try h.makeService()
        try await h.activate(service)
        // One over each limit: the object itself, the arrays and the scalar each count a level,
        // and the object, the array and its elements each count a value.
        var deep = JSONValue.string("bottom")
        for _ in 0..<(ActivationStatus.customObjectLimits.depth - 1) { deep = .array([deep]) }
        let wide = JSONValue.array(
            (0..<(ActivationStatus.customObjectLimits.values - 1)).map { .number(Double($0)) })
        for object in [["deep": deep], ["wide": wide]] {
            oversize.withLock { $0 = object }
            await #expect(throws: ActivationError.self) { _ = try await service.fetchActivationStatus() }
            do {
                _ = try await service.fetchActivationStatus()
            } catch {
                guard case .invalidResponse(let reason) = error else {
                    Issue.record("expected invalidResponse, got \(error)")
                    continue
                }
                #expect(reason.contains("customObject"))
            }
        }
        // One level less, and one value less, are accepted; the activation is untouched.
        guard case .array(let inner) = deep, let shallower = inner.first, case .array(let values) = wide else {
            Issue.record("unexpected shapes")
            return
        }
        for object in [["deep": shallower], ["wide": JSONValue.array(Array(values.dropLast()))]] {
            oversize.withLock { $0 = object }
            let status = try await service.fetchActivationStatus()
            #expect(status.state == .active && status.customObject == object)
        }
        try await service.validatePassword(try pin("1234"))
    }
}
