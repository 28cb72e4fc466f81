import Testing

@testable import SecureCore

/// A model machine: time = k · m · t (+ a fixed overhead and deterministic
/// noise), so the search logic is tested without depending on this machine's speed.
struct ModelMachine {
    var msPerKiBPass: Double
    var overheadMs: Double = 0.3
    var noise: [Double] = [1.0, 1.03, 0.97, 1.02, 0.98]

    func calibrator(target: Double, maxMemoryKiB: UInt32, parallelism: UInt32 = 1, minIterations: UInt32 = 2)
        -> KDFCalibrator
    {
        var calibrator = KDFCalibrator(
            targetMilliseconds: target, maxMemoryKiB: maxMemoryKiB, parallelism: parallelism,
            minIterations: minIterations)
        let k = msPerKiBPass
        let overhead = overheadMs
        let noise = noise
        let counter = Counter()
        calibrator.measure = { p in
            let i = counter.next()
            return (overhead + k * Double(p.memoryKiB) * Double(p.iterations)) * noise[i % noise.count]
        }
        return calibrator
    }
}

final class Counter: @unchecked Sendable {
    private var value = 0
    func next() -> Int {
        value += 1
        return value - 1
    }
}

@Suite("KDF calibrator")
struct KDFCalibratorTests {
    // About 1.3 ms per MiB-pass, as libsodium measures here.
    let machine = ModelMachine(msPerKiBPass: 1.3 / 1024)

    @Test(arguments: [100.0, 250, 500, 1000, 2000])
    func landsWithinTenPercentPreferringMemory(target: Double) throws {
        let result = try machine.calibrator(target: target, maxMemoryKiB: 4 * 1024 * 1024).calibrate()
        #expect(result.measuredMilliseconds >= 0.9 * target && result.measuredMilliseconds <= 1.1 * target)
        #expect(result.parameters.iterations == 2, "memory is not capped, so iterations stay at the minimum")
        #expect(result.backend == .libsodium)
        #expect(result.runs <= (target < 300 ? 42 : 14))
    }

    @Test func memoryCeilingRaisesIterations() throws {
        let result = try machine.calibrator(target: 1000, maxMemoryKiB: 64 * 1024).calibrate()
        #expect(result.parameters.memoryKiB <= 64 * 1024)
        #expect(result.parameters.iterations > 2)
        #expect(abs(result.measuredMilliseconds - 1000) <= 100)
    }

    @Test func parallelismUsesTheReferenceBackend() throws {
        let result = try machine.calibrator(target: 300, maxMemoryKiB: 1 << 20, parallelism: 4).calibrate()
        #expect(result.parameters.parallelism == 4)
        #expect(result.backend == .reference)
        #expect(result.parameters.memoryKiB >= 32)
    }

    @Test func progressReachesOne() throws {
        let seen = Counter()
        var last = 0.0
        _ = try machine.calibrator(target: 200, maxMemoryKiB: 1 << 20).calibrate { fraction in
            _ = seen.next()
            last = fraction
        }
        #expect(seen.next() >= 2)
        #expect(last == 1)
    }

    @Test func badSettingsAreTypedErrors() {
        #expect(throws: SecureCoreError.invalidSize(0)) {
            try machine.calibrator(target: 0, maxMemoryKiB: 1024).calibrate()
        }
        #expect(throws: SecureCoreError.invalidParallelism) {
            try machine.calibrator(target: 100, maxMemoryKiB: 1024, parallelism: 0).calibrate()
        }
        #expect(throws: SecureCoreError.invalidMemory) {
            try machine.calibrator(target: 100, maxMemoryKiB: 16, parallelism: 4).calibrate()
        }
        #expect(throws: SecureCoreError.invalidIterations) {
            try machine.calibrator(target: 100, maxMemoryKiB: 1024, minIterations: 0).calibrate()
        }
    }

    /// One real calibration, small target: it must produce measured, usable
    /// parameters (how close it lands is a benchmark figure, not a test).
    @Test func realMachineSmoke() throws {
        let result = try KDFCalibrator(targetMilliseconds: 40, maxMemoryKiB: 256 * 1024).calibrate()
        #expect(result.measuredMilliseconds > 0)
        #expect(result.parameters.iterations >= 2)
        try Argon2id.validate(result.parameters, saltByteCount: 16, outputByteCount: 32)
    }
}
