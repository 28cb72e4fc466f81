import PowerAuthProtocol
import SecureCore
import Testing

@Suite("Activation code: 10 random bytes + CRC-16/ARC in Base32, and CODE#SIGNATURE")
struct ActivationCodeTests {
    /// The test values of powerauth-crypto `docs/Activation-Code.md` ("Test values"), all
    /// with valid checksums.
    static let upstreamCodes = [
        "AAAAA-AAAAA-AAAAA-AAAAA", "LLLLL-LLLLL-LLLLL-LQJTA", "KKKKK-KKKKK-KKKKK-KDJNQ",
        "MMMMM-MMMMM-MMMMM-MUTOA", "VVVVV-VVVVV-VVVVV-VTFVA", "55555-55555-55555-55YMA",
        "W65WE-3T7VI-7FBS2-A4OYA", "DD7P5-SY4RW-XHSNB-GO52A", "X3TS3-TI35Z-JZDNT-TRPFA",
        "HCPJX-U4QC4-7UISL-NJYMA", "XHGSM-KYQDT-URE34-UZGWQ", "45AWJ-BVACS-SBWHS-ABANA",
    ]

    private func failure(_ text: String) -> ActivationCodeError? {
        do throws(ProtocolError) {
            _ = try ActivationCode(parsing: text)
            return nil
        } catch {
            guard case .invalidActivationCode(let reason) = error else { return nil }
            return reason
        }
    }

    @Test("docs/Activation-Code.md test values validate")
    func upstreamValues() throws {
        for text in Self.upstreamCodes {
            let code = try ActivationCode(parsing: text)
            #expect(code.code == text)
            #expect(code.signature == nil)
        }
        print("Activation-Code.md: \(Self.upstreamCodes.count) of \(Self.upstreamCodes.count) codes validate")
    }

    @Test("CRC-16/ARC check value and the code of known bytes")
    func knownBytes() throws {
        // 10 zero bytes have CRC 0: the all-A code of the upstream test values.
        #expect(try ActivationCode(randomBytes: [UInt8](repeating: 0, count: 10)).code == "AAAAA-AAAAA-AAAAA-AAAAA")
        // Base32 "V" is 10101: sixteen of them are the bytes AD 6B 5A D6 B5, twice.
        let v: [UInt8] = [0xAD, 0x6B, 0x5A, 0xD6, 0xB5]
        #expect(try ActivationCode(randomBytes: v + v).code == "VVVVV-VVVVV-VVVVV-VTFVA")
    }

    @Test("every generated code validates and has the upstream shape")
    func generatedValidate() throws {
        for _ in 0..<500 {
            let code = try ActivationCode.generate()
            #expect(code.code.utf8.count == 23)
            #expect(code.code.last == "A" || code.code.last == "Q")
            #expect(try ActivationCode(parsing: code.code) == code)
        }
    }

    @Test("any single-character change of a code fails")
    func singleCharacterChange() throws {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        for _ in 0..<20 {
            let code = Array(try ActivationCode.generate().code)
            for index in code.indices where code[index] != "-" {
                for replacement in alphabet where replacement != code[index] {
                    var changed = code
                    changed[index] = replacement
                    let reason = failure(String(changed))
                    // A change in the first 19 characters changes the bytes; in the last one,
                    // either the CRC's last bit or the unused bits that must be zero.
                    if index < 22 {
                        #expect(reason == .checksumMismatch, "\(String(changed))")
                    } else {
                        #expect(reason == .checksumMismatch || reason == .nonCanonical, "\(String(changed))")
                    }
                }
            }
        }
    }

    @Test("malformed codes give typed errors")
    func malformed() {
        #expect(failure("") == .malformed)
        #expect(failure("AAAAA-AAAAA-AAAAA-AAAA") == .malformed)
        #expect(failure("AAAAA-AAAAA-AAAAA-AAAAAA") == .malformed)
        #expect(failure("AAAAAAAAAAA-AAAAA-AAAAA") == .malformed)
        #expect(failure("AAAAA AAAAA-AAAAA-AAAAA") == .malformed)
        #expect(failure("aaaaa-aaaaa-aaaaa-aaaaa") == .invalidCharacter)
        #expect(failure("AAAAA-AAAAA-AAAAA-AAAA0") == .invalidCharacter)
        #expect(failure("AAAAA-AAAAA-AAAAA-AAAA8") == .invalidCharacter)
        #expect(failure("AAAAA-AAAAA-AAAAA-AAAAÄ") == .malformed)
        #expect(failure("AAAAA-AAAAA-AAAAA-AAAAB") == .nonCanonical)
        #expect(failure("VVVVV-VVVVV-VVVVV-VTFVQ") == .checksumMismatch)
        #expect(failure("AAAAA-AAAAA-AAAAA-AAAAA#") == .malformedSignature)
        #expect(failure("AAAAA-AAAAA-AAAAA-AAAAA#not base64") == .malformedSignature)
        #expect(failure("AAAAA-AAAAA-AAAAA-AAAAA#" + String(repeating: "A", count: 200)) == .malformed)
        #expect(failure("BAAAA-AAAAA-AAAAA-AAAAA#MEQCIA==") == .checksumMismatch)
    }

    @Test("verify-activation-data-signature-v3.json: CODE#SIGNATURE parses and verifies; tampering fails")
    func signedVectors() throws {
        try runVectors("verify-activation-data-signature-v3.json") { item in
            let code = try Vec.string(item.input, "activationCode")
            let signature = try Vec.string(item.output, "activationSignature")
            let master = try Vec.bytes(item.input, "masterPublicKey")
            let parsed = try ActivationCode(parsing: code + "#" + signature)
            #expect(parsed.code == code)
            #expect(parsed.qrText == code + "#" + signature)
            try parsed.verifySignature(masterServerPublicKey: master)
            // The same signature over another valid code does not verify.
            let other = try ActivationCode(
                parsing: (code == Self.upstreamCodes[4] ? Self.upstreamCodes[5] : Self.upstreamCodes[4]) + "#"
                    + signature)
            #expect(throws: ProtocolError.invalidActivationCode(.signatureMismatch)) {
                try other.verifySignature(masterServerPublicKey: master)
            }
            // Our signer, with the vector's master private key, verifies under its public key.
            let resigned = try ActivationCode(parsing: code).signed(
                masterPrivateKey: try Vec.secret(item.input, "masterPrivateKey"))
            try ActivationCode(parsing: resigned.qrText).verifySignature(masterServerPublicKey: master)
        }
    }

    @Test("a code without a signature passes verification, as upstream")
    func unsignedPasses() throws {
        let crypto = try ActivationCrypto(algorithm: .legacyP256)
        try ActivationCode.generate().verifySignature(masterServerPublicKey: try crypto.generateKeyPair().publicKey)
    }
}
