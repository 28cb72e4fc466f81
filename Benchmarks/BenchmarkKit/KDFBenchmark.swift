// KDFBenchmark: Argon2id through the Swift API beside raw libsodium and raw
// libargon2 in the same run, and the physical floor (memory traffic over the
// memcpy bandwidth measured in the same run).
import CArgon2
import CSodium
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One cell of the grid.
public struct KDFRow: Sendable, Codable {
    /// Memory in MiB.
    public var memoryMiB: Int
    /// Iterations.
    public var iterations: Int
    /// Lanes.
    public var parallelism: Int
    /// Median wall time through `Argon2id.deriveKey`, in ms.
    public var apiMs: Double
    /// Backend the API chose.
    public var apiBackend: String
    /// Median wall time of raw `crypto_pwhash` (p = 1 only), in ms.
    public var rawLibsodiumMs: Double?
    /// Median wall time of raw `argon2id_hash_raw`, in ms.
    public var rawLibargon2Ms: Double
    /// Memory traffic over measured memcpy bandwidth, in ms.
    public var floorMs: Double

    /// The JSON keys: snake_case as in the CSV header (not the encoder's `memory_mi_b`).
    enum CodingKeys: String, CodingKey {
        case memoryMiB = "memory_mib"
        case iterations, parallelism
        case apiMs = "api_ms"
        case apiBackend = "api_backend"
        case rawLibsodiumMs = "raw_libsodium_ms"
        case rawLibargon2Ms = "raw_libargon2_ms"
        case floorMs = "floor_ms"
    }

    /// API time over the fastest raw backend for this p.
    public var apiOverRaw: Double { apiMs / (rawLibsodiumMs ?? rawLibargon2Ms) }
    /// API time over the physical floor.
    public var apiOverFloor: Double { apiMs / floorMs }
}

/// The grid and how it is run.
public struct KDFBenchmark: Sendable {
    /// Memory sizes in MiB.
    public var memoriesMiB: [Int]
    /// Iteration counts.
    public var iterations: [Int]
    /// Lane counts.
    public var parallelisms: [Int]
    /// Runs per cell (the median is reported).
    public var repeats: Int

    /// Creates a grid.
    public init(memoriesMiB: [Int], iterations: [Int], parallelisms: [Int], repeats: Int) {
        self.memoriesMiB = memoriesMiB
        self.iterations = iterations
        self.parallelisms = parallelisms
        self.repeats = repeats
    }

    /// The quick grid of `securepin kdf bench`.
    public static let quick = KDFBenchmark(
        memoriesMiB: [16, 64, 256], iterations: [1, 3], parallelisms: [1, 2], repeats: 3)
    /// The full grid of `make bench-kdf`.
    public static let full = KDFBenchmark(
        memoriesMiB: [16, 64, 256, 1024], iterations: [1, 3], parallelisms: [1, 2], repeats: 3)

    /// Runs the grid; `progress` is told each finished cell.
    public func run(progress: (KDFRow) -> Void = { _ in }) throws -> (rows: [KDFRow], memcpyGiBps: Double) {
        let bandwidth = measureMemcpyGiBps()
        var rows: [KDFRow] = []
        let password = try SecureBytes.random(count: 16)
        let salt = try SecureRandom.bytes(count: 16)
        for m in memoriesMiB {
            for t in iterations {
                for p in parallelisms {
                    let parameters = Argon2id.Parameters(
                        memoryKiB: UInt32(m * 1024), iterations: UInt32(t), parallelism: UInt32(p))
                    let api = try median(repeats) {
                        _ = try Argon2id.deriveKey(from: password, salt: salt, parameters: parameters)
                    }
                    let sodium: Double? =
                        p == 1
                        ? try median(repeats) { try rawLibsodium(password, salt, parameters) } : nil
                    let reference = try median(repeats) { try rawLibargon2(password, salt, parameters) }
                    // Argon2 writes every block once, then reads two and writes one per later pass.
                    let trafficKiB = Double(m * 1024) * Double(2 + 3 * (t - 1))
                    let floor = trafficKiB / (bandwidth * 1024 * 1024) * 1000
                    let row = KDFRow(
                        memoryMiB: m, iterations: t, parallelism: p, apiMs: api,
                        apiBackend: p == 1 ? "libsodium" : "libargon2", rawLibsodiumMs: sodium,
                        rawLibargon2Ms: reference, floorMs: floor)
                    rows.append(row)
                    progress(row)
                }
            }
        }
        return (rows, bandwidth)
    }
}

func milliseconds(_ body: () throws -> Void) rethrows -> Double {
    var a = timespec()
    var b = timespec()
    clock_gettime(CLOCK_MONOTONIC_RAW, &a)
    try body()
    clock_gettime(CLOCK_MONOTONIC_RAW, &b)
    return Double(b.tv_sec - a.tv_sec) * 1000 + Double(b.tv_nsec - a.tv_nsec) / 1_000_000
}

/// Median of `n` timed runs after one untimed warm-up run (first-touch page
/// faults and cache state otherwise favour whichever variant runs second).
func median(_ n: Int, _ body: () throws -> Void) throws -> Double {
    try body()
    var samples: [Double] = []
    for _ in 0..<max(1, n) { samples.append(try milliseconds(body)) }
    samples.sort()
    return samples[samples.count / 2]
}

struct RawFailure: Error {}

func rawLibsodium(_ password: SecureBytes, _ salt: [UInt8], _ p: Argon2id.Parameters) throws {
    var out = [UInt8](repeating: 0, count: 32)
    let rc = password.withUnsafeBytes { pw in
        crypto_pwhash(
            &out, 32, pw.baseAddress!.assumingMemoryBound(to: CChar.self), UInt64(pw.count), salt,
            UInt64(p.iterations), Int(p.memoryKiB) * 1024, crypto_pwhash_ALG_ARGON2ID13)
    }
    guard rc == 0 else { throw RawFailure() }
}

func rawLibargon2(_ password: SecureBytes, _ salt: [UInt8], _ p: Argon2id.Parameters) throws {
    var out = [UInt8](repeating: 0, count: 32)
    let rc = password.withUnsafeBytes { pw in
        argon2id_hash_raw(
            p.iterations, p.memoryKiB, p.parallelism, pw.baseAddress, pw.count, salt, salt.count, &out, 32)
    }
    guard rc == ARGON2_OK.rawValue else { throw RawFailure() }
}

/// Keeps the optimiser from deleting a copy nobody reads.
@inline(never)
func consume(_ pointer: UnsafeMutableRawPointer) {
    if pointer.load(as: UInt8.self) == 0xFF { print("", terminator: "") }
}

/// memcpy bandwidth over a 256 MiB buffer, best of 3, in GiB/s.
public func measureMemcpyGiBps() -> Double {
    let size = 256 << 20
    let a = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
    let b = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
    defer {
        a.deallocate()
        b.deallocate()
    }
    memset(a, 1, size)
    memset(b, 2, size)
    var best = Double.infinity
    for _ in 0..<3 {
        let ms = milliseconds {
            _ = memcpy(b, a, size)
            consume(b)
        }
        best = min(best, ms)
    }
    let gib = Double(size) / 1_073_741_824.0
    return gib / (best / 1000.0)
}
