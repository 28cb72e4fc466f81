// activation-bench: authentication codes per second for each factor set,
// beside a raw HMAC-SHA256 loop measured in the same run (the ratio is what
// to compare across machines). Runs for a few seconds.
import Activation
import PowerAuthProtocol
import SecureCore

let budget = Duration.milliseconds(600)
let clock = ContinuousClock()

/// Calls `body` until `budget` has passed; returns calls per second.
func rate(_ body: () throws -> Void) rethrows -> Double {
    for _ in 0..<100 { try body() }  // warm-up
    var calls = 0
    let start = clock.now
    while clock.now - start < budget {
        for _ in 0..<64 { try body() }
        calls += 64
    }
    let elapsed = clock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Double(calls) / seconds
}

func format(_ value: Double) -> String {
    let rounded = Int(value.rounded())
    var digits = String(rounded)
    var grouped = ""
    while digits.count > 3 {
        grouped = " " + String(digits.suffix(3)) + grouped
        digits = String(digits.dropLast(3))
    }
    return digits + grouped
}

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

do {
    let crypto = try ActivationCrypto()
    let keys = try crypto.factorKeys(masterSecret: try SecureBytes.random(count: 16))
    let signing = keys.signingKeys
    let nonce = [UInt8](repeating: 0x42, count: 16)
    let request = try RequestData(
        method: "POST", uriIdentifier: "/pa/signature/validate", nonce: nonce,
        body: Array(String(repeating: "{\"amount\":\"100.00\",\"currency\":\"EUR\"}", count: 4).utf8))
    let data = try request.normalized(applicationSecret: "AAECAwQFBgcICQoLDA0ODw==")
    let counter = HashCounter.random()

    // Reference: one HMAC-SHA256 over the same data with a key in secure
    // memory (each call opens and closes the key's pages, as codes do).
    let hmacRate = try rate { _ = try HMACSHA256.authenticate(data, key: keys.possession) }
    print("normalised data: \(data.count) bytes; \(budget) per measurement")
    print("\(pad("raw HMAC-SHA256", 46)) \(pad(format(hmacRate), 10)) /s   1.00 x")
    // HMAC-SHA256 calls inside one code: component i costs 2 + 2i.
    let hmacCalls: [FactorSet: Int] = [.possession: 2, .possessionKnowledge: 6, .possessionKnowledgeBiometry: 12]
    for factors: FactorSet in [.possession, .possessionKnowledge, .possessionKnowledgeBiometry] {
        for (label, format_) in [("V3.1 base64", AuthenticationCodeFormat.base64), ("offline 8", .offline)] {
            let codes = try rate {
                _ = try crypto.authenticationCode(
                    data: data, factors: factors, keys: signing, counter: counter, format: format_)
            }
            let name = "\(factors.rawValue) (\(label))"
            let ratio = String(Int((hmacRate / codes * 100).rounded())).paddedHundredths
            let calls = hmacCalls[factors] ?? 0
            print("\(pad(name, 46)) \(pad(format(codes), 10)) /s   \(ratio) x slower  (\(calls) HMACs per code)")
        }
    }
    let counterRate = try rate { _ = try counter.next() }
    print("\(pad("counter step (fold SHA-256)", 46)) \(pad(format(counterRate), 10)) /s")

    // One knowledge-key unwrap at the default Argon2id cost: the price of one
    // PIN guess for anyone who copies the wrapped key (and of every unlock).
    let pin = try MutablePassword()
    for digit: UInt32 in [0x31, 0x32, 0x33, 0x34] { try pin.addCharacter(digit) }
    let password = try pin.copyToImmutable()
    pin.destroy()
    let wrapped = try crypto.wrapKnowledgeKey(keys.knowledge, pin: password)
    let start = clock.now
    let unwrapped = try crypto.unwrapKnowledgeKey(wrapped, pin: password)
    let cost = clock.now - start
    unwrapped.destroy()
    let p = PINKeyDerivationParameters.default
    print("knowledge key unwrap (Argon2id \(p.memoryKiB / 1024) MiB, t=\(p.iterations)): \(cost)")
} catch {
    print("activation-bench failed: \(error)")
}

extension String {
    /// "123" (hundredths) -> "1.23".
    var paddedHundredths: String {
        let digits = count < 3 ? String(repeating: "0", count: 3 - count) + self : self
        return digits.dropLast(2) + "." + digits.suffix(2)
    }
}
