// securepin-bench: speed figures for SecurePIN, each beside a reference
// measured in the same run, reported as ratios. Run on demand (`make bench`);
// never a timed assertion in the test suite.
//
//   securepin-bench [memory] [--json] [--rounds N]
//   securepin-bench kdf [--out DIR] [--quick]
//   securepin-bench vault
//   securepin-bench server [--clients N] [--requests N] [--postgres DSN-FILE] [--securepin PATH] [--urlsession] [--json]
import BenchmarkKit
import CSodium
import Foundation
import PinVault
import PowerAuthProtocol
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Monotonic nanoseconds.
func now() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

struct Figure {
    var name: String
    var medianNs: Double
    var minNs: Double
    var reference: String?
    var goalNs: Double?
}

/// Runs `body` `iterations` times per round; returns per-call median and minimum in ns.
func measure(rounds: Int, iterations: Int, _ body: () throws -> Void) rethrows -> (median: Double, min: Double) {
    for _ in 0..<max(1, iterations / 10) { try body() }  // warm-up
    var samples: [Double] = []
    for _ in 0..<rounds {
        let start = now()
        for _ in 0..<iterations { try body() }
        samples.append(Double(now() - start) / Double(iterations))
    }
    samples.sort()
    return (samples[samples.count / 2], samples[0])
}

func memoryFigures(rounds: Int) throws -> [Figure] {
    guard sodium_init() >= 0 else { fatalError("libsodium failed to initialise") }
    var figures: [Figure] = []

    let rawAlloc = measure(rounds: rounds, iterations: 2000) {
        let p = sodium_malloc(64)
        sodium_free(p)
    }
    figures.append(Figure(name: "sodium_malloc+free (reference)", medianNs: rawAlloc.median, minNs: rawAlloc.min))
    let region = sodium_malloc(64)!
    let rawProtect = measure(rounds: rounds, iterations: 5000) {
        sodium_mprotect_readwrite(region)
        sodium_mprotect_noaccess(region)
    }
    sodium_free(region)
    figures.append(Figure(name: "mprotect pair (reference)", medianNs: rawProtect.median, minNs: rawProtect.min))

    let pin = try MutablePassword()
    for d in 0..<7 { try pin.addCharacter(UInt32(0x30 + d)) }
    let keystroke = try measure(rounds: rounds, iterations: 5000) {
        try pin.addCharacter(0x37)
        try pin.removeLastCharacter()
    }
    figures.append(
        Figure(
            name: "keystroke (add or remove, 8 chars)", medianNs: keystroke.median / 2, minNs: keystroke.min / 2,
            reference: "mprotect pair (reference)", goalNs: 5_000))

    let create = try measure(rounds: rounds, iterations: 2000) {
        let p = try MutablePassword()
        p.destroy()
    }
    figures.append(
        Figure(
            name: "create+destroy", medianNs: create.median, minNs: create.min,
            reference: "sodium_malloc+free (reference)", goalNs: 50_000))

    let other = try MutablePassword()
    for d in 0..<8 { try other.addCharacter(UInt32(0x30 + d)) }
    try pin.addCharacter(0x37)
    var sink = false
    let equality = try measure(rounds: rounds, iterations: 5000) { sink = try pin.isEqual(to: other) != sink }
    figures.append(
        Figure(
            name: "equality (8 chars)", medianNs: equality.median, minNs: equality.min,
            reference: "mprotect pair (reference)"))

    let immutable = try pin.copyToImmutable()
    var total = 0
    let reveal = measure(rounds: rounds, iterations: 2000) {
        total &+= immutable.withUnsafeUTF8Bytes { $0.count }
    }
    figures.append(
        Figure(
            name: "reveal UTF-8 (8 chars)", medianNs: reveal.median, minNs: reveal.min,
            reference: "sodium_malloc+free (reference)"))
    withExtendedLifetime((sink, total)) {}
    return figures
}

func report(_ figures: [Figure], json: Bool) {
    let byName = Dictionary(uniqueKeysWithValues: figures.map { ($0.name, $0) })
    func us(_ ns: Double) -> String {
        let v = (ns / 10).rounded() / 100
        return "\(v)"
    }
    if json {
        let rows = figures.map { f -> String in
            let ratio = f.reference.flatMap { byName[$0] }.map { f.medianNs / $0.medianNs }
            return "{\"name\":\"\(f.name)\",\"median_us\":\(us(f.medianNs)),\"min_us\":\(us(f.minNs))"
                + (ratio.map { ",\"ratio\":\((($0 * 100).rounded()) / 100),\"reference\":\"\(f.reference!)\"" } ?? "")
                + (f.goalNs.map { ",\"goal_us\":\(us($0))" } ?? "") + "}"
        }
        print("[" + rows.joined(separator: ",\n ") + "]")
        return
    }
    func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
    print(pad("operation", 36) + pad("median µs", 11) + pad("min µs", 9) + pad("× reference", 13) + "goal")
    for f in figures {
        let ratio =
            f.reference.flatMap { byName[$0] }.map { "\(((f.medianNs / $0.medianNs) * 100).rounded() / 100)" } ?? "-"
        let goal = f.goalNs.map { "≤ \(us($0)) µs " + (f.medianNs <= $0 ? "(met)" : "(missed)") } ?? ""
        print(pad(f.name, 36) + pad(us(f.medianNs), 11) + pad(us(f.minNs), 9) + pad(ratio, 13) + goal)
    }
}

/// The KDF grid (API beside raw libsodium and libargon2, floor) and the
/// calibrator's accuracy, written as table, CSV, JSON and SVG.
func kdfSuite(outputDirectory: String, quick: Bool) throws {
    let grid = quick ? KDFBenchmark.quick : KDFBenchmark.full
    let (rows, bandwidth) = try grid.run { row in
        FileHandle.standardError.write(
            Data("  measured m=\(row.memoryMiB) MiB t=\(row.iterations) p=\(row.parallelism)\n".utf8))
    }
    print(kdfTable(rows, memcpyGiBps: bandwidth))
    try FileManager.default.createDirectory(atPath: outputDirectory, withIntermediateDirectories: true)
    try kdfCSV(rows).write(toFile: outputDirectory + "/kdf.csv", atomically: true, encoding: .utf8)
    try kdfJSON(rows, memcpyGiBps: bandwidth).write(
        toFile: outputDirectory + "/kdf.json", atomically: true, encoding: .utf8)
    try kdfSVG(rows, targetMs: 500).write(toFile: outputDirectory + "/kdf.svg", atomically: true, encoding: .utf8)
    print("wrote \(outputDirectory)/kdf.csv, kdf.json, kdf.svg\n")

    // Calibrator accuracy: the calibrator's own verifying run, and an
    // independent median of three fresh runs of the parameters it chose.
    print("calibrator: target ms  memory KiB  t  calibrator ms  ratio  re-measured ms (median of 3)  ratio")
    for target in quick ? [100.0, 500] : [100.0, 250, 500, 1000, 2000] {
        let result = try KDFCalibrator(targetMilliseconds: target).calibrate()
        var again: [Double] = []
        for _ in 0..<3 { again.append(try KDFCalibrator.timeOneDerivation(result.parameters)) }
        again.sort()
        let line = [
            String(format: "%10.0f", target), String(format: "%11d", result.parameters.memoryKiB),
            String(format: "%2d", result.parameters.iterations), String(format: "%14.1f", result.measuredMilliseconds),
            String(format: "%6.2f", result.measuredMilliseconds / target), String(format: "%29.1f", again[1]),
            String(format: "%6.2f", again[1] / target),
        ]
        print("            " + line.joined(separator: " "))
    }
}

/// Vault unlock overhead: unlock wall time minus the Argon2id time measured
/// in the same run with the same parameters (fsyncs of the counter included).
func vaultSuite(rounds: Int) throws {
    let parameters = Argon2id.Parameters.interactive
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spc-bench-vault-\(getpid())").path
    let pin = try MutablePassword()
    for d in [0x31, 0x39, 0x37, 0x33] as [UInt32] { try pin.addCharacter(d) }
    let password = try pin.copyToImmutable()
    pin.destroy()
    let vault = try PinVault.create(
        at: directory, secret: SecureBytes.random(count: 64), pin: password, parameters: parameters)
    defer { _ = try? vault.destroy() }
    let salt = try SecureRandom.bytes(count: 16)
    var unlocks: [Double] = []
    var kdfs: [Double] = []
    let n = max(5, min(rounds, 15))
    for _ in 0..<n {
        // Alternate the two so drift affects both alike.
        let a = monotonicMilliseconds()
        try vault.unlock(pin: password) { _ in }
        let b = monotonicMilliseconds()
        _ = try Argon2id.deriveKey(from: password, salt: salt, parameters: parameters)
        let c = monotonicMilliseconds()
        unlocks.append(b - a)
        kdfs.append(c - b)
    }
    unlocks.sort()
    kdfs.sort()
    print("vault unlock with Argon2id \(parameters), \(n) runs (medians):")
    print(String(format: "  unlock           %8.2f ms", unlocks[n / 2]))
    print(String(format: "  Argon2id alone   %8.2f ms", kdfs[n / 2]))
    print(
        String(
            format: "  overhead         %8.2f ms   (goal <= 5 ms, counter fsyncs included)",
            unlocks[n / 2] - kdfs[n / 2]))
}

func monotonicMilliseconds() -> Double { Double(now()) / 1_000_000 }

var json = false
var rounds = 31
var suite = "memory"
var outputDirectory = ".build/bench"
var quick = false
var clients = 32
var requests = 200
var postgresDSNFile: String?
var securepinPath: String?
var urlSession = false
var algorithms: [ProtocolAlgorithm] = []
var rest = Array(CommandLine.arguments.dropFirst())
while !rest.isEmpty {
    let a = rest.removeFirst()
    switch a {
    case "--json": json = true
    case "--rounds":
        guard let n = rest.first.flatMap({ Int($0) }), n > 0 else {
            print("securepin-bench: --rounds needs a positive number")
            exit(2)
        }
        rounds = n
        rest.removeFirst()
    case "memory", "kdf", "vault", "server": suite = a
    case "--clients", "--requests":
        guard let n = rest.first.flatMap({ Int($0) }), (1...10_000).contains(n) else {
            print("securepin-bench: \(a) needs a number from 1 to 10000")
            exit(2)
        }
        if a == "--clients" { clients = n } else { requests = n }
        rest.removeFirst()
    case "--quick": quick = true
    case "--urlsession": urlSession = true
    case "--securepin":
        guard let file = rest.first else {
            print("securepin-bench: --securepin needs the path of the securepin binary")
            exit(2)
        }
        securepinPath = file
        rest.removeFirst()
    case "--algorithm":
        guard let name = rest.first, let algorithm = ProtocolAlgorithm(rawValue: name) else {
            print(
                "securepin-bench: --algorithm needs one of "
                    + ProtocolAlgorithm.allCases.map(\.rawValue).joined(separator: ", "))
            exit(2)
        }
        if !algorithms.contains(algorithm) { algorithms.append(algorithm) }
        rest.removeFirst()
    case "--postgres":
        guard let file = rest.first else {
            print("securepin-bench: --postgres needs a file that holds the cluster's connection string")
            exit(2)
        }
        postgresDSNFile = file
        rest.removeFirst()
    case "--out":
        guard let dir = rest.first else {
            print("securepin-bench: --out needs a directory")
            exit(2)
        }
        outputDirectory = dir
        rest.removeFirst()
    default:
        print(
            "usage: securepin-bench [memory|vault] [--json] [--rounds N] | securepin-bench kdf [--out DIR] [--quick]"
                + " | securepin-bench server [--clients N] [--requests N] [--postgres DSN-FILE] [--securepin PATH]"
                + " [--algorithm NAME]... [--urlsession] [--json]")
        exit(2)
    }
}
do {
    switch suite {
    case "kdf": try kdfSuite(outputDirectory: outputDirectory, quick: quick)
    case "vault": try vaultSuite(rounds: rounds)
    case "server":
        // The instances run the securepin binary next to this one unless --securepin names another.
        let securepin =
            securepinPath
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("securepin").path
        guard FileManager.default.isExecutableFile(atPath: securepin) else {
            print("securepin-bench: no securepin binary at \(securepin) (build it, or give --securepin PATH)")
            exit(2)
        }
        try ServerBench.run(
            .init(
                clients: clients, requests: requests, postgresDSNFile: postgresDSNFile, securepin: securepin,
                urlSession: urlSession, json: json,
                algorithms: algorithms.isEmpty ? ServerBench.defaultAlgorithms : algorithms))
    default: report(try memoryFigures(rounds: rounds), json: json)
    }
} catch {
    print("securepin-bench: \(error)")
    exit(1)
}
