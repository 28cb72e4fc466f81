import Foundation
import PowerAuthProtocol
import SecureCore
import Testing

@Suite("Knowledge key without a local oracle")
struct KnowledgeKeyTests {
    let crypto: ActivationCrypto

    init() throws { crypto = try ActivationCrypto() }

    private func pin(_ text: String) throws -> Password {
        let mutable = try MutablePassword()
        for scalar in text.unicodeScalars { try mutable.addCharacter(scalar.value) }
        defer { mutable.destroy() }
        return try mutable.copyToImmutable()
    }

    @Test("the right PIN gives back the key")
    func rightPIN() throws {
        let key = try SecureBytes.random(count: 16)
        let wrapped = try crypto.wrapKnowledgeKey(key, pin: try pin("4711"), parameters: .testing)
        let unwrapped = try crypto.unwrapKnowledgeKey(wrapped, pin: try pin("4711"))
        #expect(try unwrapped.isEqual(to: key))
    }

    @Test("a wrong PIN succeeds and yields a different key")
    func wrongPIN() throws {
        let key = try SecureBytes.random(count: 16)
        let wrapped = try crypto.wrapKnowledgeKey(key, pin: try pin("4711"), parameters: .testing)
        for guess in ["4712", "0000", "47111", "1234"] {
            let unwrapped = try crypto.unwrapKnowledgeKey(wrapped, pin: try pin(guess))
            #expect(unwrapped.count == 16)
            #expect(try !unwrapped.isEqual(to: key))
        }
    }

    @Test("a wrong PIN is only detected by the server's verification")
    func serverDetectsWrongPIN() throws {
        let master = try SecureBytes.random(count: 16)
        let keys = try crypto.factorKeys(masterSecret: master)
        let wrapped = try crypto.wrapKnowledgeKey(keys.knowledge, pin: try pin("2580"), parameters: .testing)
        let counter = HashCounter.random()
        let data = Array("POST&L3BhL3Rlc3Q=&AAAAAAAAAAAAAAAAAAAAAA==&&offline".utf8)
        let wrong = try crypto.unwrapKnowledgeKey(wrapped, pin: try pin("2581"))
        let code = try crypto.authenticationCode(
            data: data, factors: .possessionKnowledge,
            keys: SigningKeys(possession: keys.possession, knowledge: wrong), counter: counter, format: .base64)
        let verdict = try crypto.verifyAuthenticationCode(
            code, data: data, factors: .possessionKnowledge, keys: keys.signingKeys, counter: counter, format: .base64)
        #expect(verdict == nil)
        let right = try crypto.unwrapKnowledgeKey(wrapped, pin: try pin("2580"))
        let good = try crypto.authenticationCode(
            data: data, factors: .possessionKnowledge,
            keys: SigningKeys(possession: keys.possession, knowledge: right), counter: counter, format: .base64)
        let match = try crypto.verifyAuthenticationCode(
            good, data: data, factors: .possessionKnowledge, keys: keys.signingKeys, counter: counter, format: .base64)
        #expect(match?.distance == 0)
    }

    @Test("every wrap draws a new salt, so the wrapped bytes differ")
    func freshSalt() throws {
        let key = try SecureBytes.random(count: 16)
        let first = try crypto.wrapKnowledgeKey(key, pin: try pin("1357"), parameters: .testing)
        let second = try crypto.wrapKnowledgeKey(key, pin: try pin("1357"), parameters: .testing)
        #expect(first.salt != second.salt)
        #expect(first.wrapped != second.wrapped)
        #expect(first.salt.count == 16 && first.wrapped.count == 16)
    }

    @Test("bad parameters, sizes and an empty PIN are typed errors")
    func rejectedInputs() throws {
        let key = try SecureBytes.random(count: 16)
        #expect(throws: ProtocolError.invalidKDFParameters(memoryKiB: 4, iterations: 1)) {
            try crypto.wrapKnowledgeKey(key, pin: try pin("1234"), parameters: .init(memoryKiB: 4, iterations: 1))
        }
        #expect(throws: ProtocolError.invalidKDFParameters(memoryKiB: 64, iterations: 0)) {
            try crypto.wrapKnowledgeKey(key, pin: try pin("1234"), parameters: .init(memoryKiB: 64, iterations: 0))
        }
        #expect(throws: ProtocolError.invalidKDFParameters(memoryKiB: 2_000_000, iterations: 1)) {
            let stored = WrappedKnowledgeKey(
                salt: Array(repeating: 1, count: 16), parameters: .init(memoryKiB: 2_000_000, iterations: 1),
                wrapped: Array(repeating: 2, count: 16))
            _ = try crypto.unwrapKnowledgeKey(stored, pin: try pin("1234"))
        }
        #expect(throws: ProtocolError.invalidLength(field: "salt", expected: 16, actual: 3)) {
            let stored = WrappedKnowledgeKey(
                salt: [1, 2, 3], parameters: .testing, wrapped: Array(repeating: 2, count: 16))
            _ = try crypto.unwrapKnowledgeKey(stored, pin: try pin("1234"))
        }
        #expect(throws: ProtocolError.emptyPIN) {
            try crypto.wrapKnowledgeKey(key, pin: try pin(""), parameters: .testing)
        }
        #expect(throws: ProtocolError.invalidLength(field: "knowledge key", expected: 16, actual: 32)) {
            try crypto.wrapKnowledgeKey(try SecureBytes.random(count: 32), pin: try pin("1234"), parameters: .testing)
        }
    }

    @Test("the wrapped form round-trips through JSON and shows no key")
    func storable() throws {
        let key = try SecureBytes.random(count: 16)
        let wrapped = try crypto.wrapKnowledgeKey(key, pin: try pin("9876"), parameters: .testing)
        let json = try JSONEncoder().encode(wrapped)
        let decoded = try JSONDecoder().decode(WrappedKnowledgeKey.self, from: json)
        #expect(decoded == wrapped)
        #expect(try crypto.unwrapKnowledgeKey(decoded, pin: try pin("9876")).isEqual(to: key))
        #expect(String(describing: SigningKeys(knowledge: key)).contains("redacted"))
    }
}
