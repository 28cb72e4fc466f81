import CPostQuantum
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `securepin pq`: an interoperability and test tool for ML-KEM (FIPS 203) and ML-DSA
/// (FIPS 204), served by the audited C target CPostQuantum. One JSON request per line on
/// standard input, one JSON answer per line on standard output, bytes as lowercase hex.
/// It prints secret keys and shared secrets on purpose, to compare them with another
/// implementation: it is for test keys only, and holds them in ordinary memory.
enum PQCommand {
    static func run(_ arguments: [String]) -> Int32 {
        let args = Arguments(arguments, command: "pq", usage: Help.of("pq"))
        args.finish()
        while let line = readLine(strippingNewline: true) {
            let answer: String
            do {
                answer = try respond(to: line)
            } catch {
                answer = "{\"error\":\"\(error.message)\"}"
            }
            print(answer)
            fflush(nil)  // every stream: the answer leaves before the next line is read
        }
        return ExitCode.ok
    }

    /// Why a request line was refused (a fixed text: no input is echoed).
    struct Refusal: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    enum KEM: String {
        case mlkem768 = "ML-KEM-768"
        case mlkem1024 = "ML-KEM-1024"
        var param: pq_mlkem_param { self == .mlkem768 ? PQ_MLKEM_768 : PQ_MLKEM_1024 }
        var ek: Int { pq_mlkem_ek_bytes(param) }
        var dk: Int { pq_mlkem_dk_bytes(param) }
        var ct: Int { pq_mlkem_ct_bytes(param) }
    }

    enum DSA: String {
        case mldsa65 = "ML-DSA-65"
        case mldsa87 = "ML-DSA-87"
        var param: pq_mldsa_param { self == .mldsa65 ? PQ_MLDSA_65 : PQ_MLDSA_87 }
        var pk: Int { pq_mldsa_pk_bytes(param) }
        var sk: Int { pq_mldsa_sk_bytes(param) }
        var sig: Int { pq_mldsa_sig_bytes(param) }
    }

    /// One request's fields: strings only.
    struct Request {
        let fields: [String: String]

        init(_ line: String) throws(Refusal) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw Refusal("not a JSON object")
            }
            var fields: [String: String] = [:]
            for (key, value) in object {
                guard let text = value as? String else { throw Refusal("every field must be a string") }
                fields[key] = text
            }
            self.fields = fields
        }

        func string(_ key: String) throws(Refusal) -> String {
            guard let value = fields[key] else { throw Refusal("missing field \(key)") }
            return value
        }

        /// A hex field; `count` when the length is fixed.
        func bytes(_ key: String, count: Int? = nil) throws(Refusal) -> [UInt8] {
            guard let value = parseHex(try string(key)) else { throw Refusal("\(key) is not hex") }
            if let count, value.count != count { throw Refusal("\(key) must be \(count) bytes") }
            return value
        }

        func optionalBytes(_ key: String, count: Int? = nil) throws(Refusal) -> [UInt8]? {
            fields[key] == nil ? nil : try bytes(key, count: count)
        }
    }

    static func respond(to line: String) throws(Refusal) -> String {
        let request = try Request(line)
        let op = try request.string("op")
        let alg = request.fields["alg"]
        switch op {
        case "keygen" where alg.flatMap(DSA.init(rawValue:)) != nil:
            return try dsaKeygen(DSA(rawValue: alg ?? "") ?? .mldsa65, request)
        case "keygen", "encaps", "decaps":
            let kem = try kemAlgorithm(alg, request: request, op: op)
            return try kemOperation(op, kem, request)
        case "sign", "verify":
            let dsa = try dsaAlgorithm(alg, request: request, op: op)
            return try dsaOperation(op, dsa, request)
        default:
            throw Refusal("unknown op (keygen, encaps, decaps, sign, verify)")
        }
    }

    /// The KEM named by `alg`; for decapsulation without `alg`, the one whose key has dk's length.
    static func kemAlgorithm(_ alg: String?, request: Request, op: String) throws(Refusal) -> KEM {
        if let alg {
            if let kem = KEM(rawValue: alg) { return kem }
            throw Refusal("unknown alg (ML-KEM-768, ML-KEM-1024, ML-DSA-65, ML-DSA-87)")
        }
        if op == "decaps", let dk = request.fields["dk"] {
            if dk.utf8.count == 2 * KEM.mlkem768.dk { return .mlkem768 }
            if dk.utf8.count == 2 * KEM.mlkem1024.dk { return .mlkem1024 }
        }
        throw Refusal("missing field alg")
    }

    /// The DSA named by `alg`; without it, the one whose key has the length of sk or pk.
    static func dsaAlgorithm(_ alg: String?, request: Request, op: String) throws(Refusal) -> DSA {
        if let alg {
            guard let dsa = DSA(rawValue: alg) else { throw Refusal("alg must be ML-DSA-65 or ML-DSA-87 for \(op)") }
            return dsa
        }
        let key = request.fields[op == "sign" ? "sk" : "pk"]?.utf8.count ?? 0
        for dsa in [DSA.mldsa65, .mldsa87] where key == 2 * (op == "sign" ? dsa.sk : dsa.pk) { return dsa }
        throw Refusal("missing field alg")
    }

    static func kemOperation(_ op: String, _ kem: KEM, _ request: Request) throws(Refusal) -> String {
        var ss = [UInt8](repeating: 0, count: Int(PQ_MLKEM_SS_BYTES))
        switch op {
        case "keygen":
            let seed = try request.bytes("seed", count: Int(PQ_MLKEM_SEED_BYTES))
            var ek = [UInt8](repeating: 0, count: kem.ek), dk = [UInt8](repeating: 0, count: kem.dk)
            guard pq_mlkem_keygen(kem.param, seed, &ek, &dk) == PQ_OK else { throw Refusal("keygen failed") }
            return "{\"ek\":\"\(hex(ek))\",\"dk\":\"\(hex(dk))\"}"
        case "encaps":
            let ek = try request.bytes("ek")
            let m = try request.optionalBytes("m", count: Int(PQ_MLKEM_MSG_BYTES))
            var ct = [UInt8](repeating: 0, count: kem.ct)
            let rc =
                m.map { pq_mlkem_encaps_derand(kem.param, ek, ek.count, $0, &ct, &ss) }
                ?? pq_mlkem_encaps(kem.param, ek, ek.count, &ct, &ss)
            guard rc == PQ_OK else { throw Refusal("invalid encapsulation key") }
            return "{\"ct\":\"\(hex(ct))\",\"ss\":\"\(hex(ss))\"}"
        default:
            let dk = try request.bytes("dk"), ct = try request.bytes("ct")
            guard pq_mlkem_decaps(kem.param, dk, dk.count, ct, ct.count, &ss) == PQ_OK else {
                throw Refusal("invalid decapsulation key or ciphertext length")
            }
            return "{\"ss\":\"\(hex(ss))\"}"
        }
    }

    static func dsaOperation(_ op: String, _ dsa: DSA, _ request: Request) throws(Refusal) -> String {
        let msg = try request.optionalBytes("msg") ?? []
        let ctx = try request.optionalBytes("ctx") ?? []
        guard ctx.count <= Int(PQ_MLDSA_CTX_MAX) else { throw Refusal("ctx must be at most 255 bytes") }
        if op == "sign" {
            let sk = try request.bytes("sk", count: dsa.sk)
            let rnd = try request.optionalBytes("rnd", count: Int(PQ_MLDSA_RND_BYTES))
            var sig = [UInt8](repeating: 0, count: dsa.sig)
            let rc = pq_mldsa_sign(dsa.param, sk, sk.count, msg, msg.count, ctx, ctx.count, rnd, &sig)
            guard rc == PQ_OK else { throw Refusal("sign failed") }
            return "{\"sig\":\"\(hex(sig))\"}"
        }
        let pk = try request.bytes("pk"), sig = try request.bytes("sig")
        let ok = pq_mldsa_verify(dsa.param, pk, pk.count, msg, msg.count, ctx, ctx.count, sig, sig.count) == PQ_OK
        return "{\"ok\":\(ok)}"
    }

    static func dsaKeygen(_ dsa: DSA, _ request: Request) throws(Refusal) -> String {
        let seed = try request.bytes("seed", count: Int(PQ_MLDSA_SEED_BYTES))
        var pk = [UInt8](repeating: 0, count: dsa.pk), sk = [UInt8](repeating: 0, count: dsa.sk)
        guard pq_mldsa_keygen(dsa.param, seed, &pk, &sk) == PQ_OK else { throw Refusal("keygen failed") }
        return "{\"pk\":\"\(hex(pk))\",\"sk\":\"\(hex(sk))\"}"
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8](repeating: 0, count: 2 * bytes.count)
        for (i, b) in bytes.enumerated() {
            out[2 * i] = digits[Int(b >> 4)]
            out[2 * i + 1] = digits[Int(b & 15)]
        }
        return String(decoding: out, as: UTF8.self)
    }
}
