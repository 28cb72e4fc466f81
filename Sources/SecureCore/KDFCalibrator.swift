#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Finds Argon2id parameters that take a target wall time on this machine,
/// the way cryptsetup calibrates LUKS2 key slots: grow memory until one run
/// takes a meaningful fraction of the target, extrapolate with the model
/// time ∝ memory × iterations, then measure and correct until a run lands
/// within ±5 % of the target. Memory is preferred over iterations: the
/// iteration count stays at its minimum unless memory is at its ceiling.
///
/// ```swift
/// let result = try KDFCalibrator(targetMilliseconds: 500).calibrate()
/// print(result.parameters, result.measuredMilliseconds)
/// ```
public struct KDFCalibrator: Sendable {
    /// The outcome: parameters that were actually measured, never extrapolated only.
    public struct Result: Sendable, Hashable, Codable {
        /// The recommended parameters.
        public var parameters: Argon2id.Parameters
        /// The backend that ran them (and that ``Argon2id`` picks for them).
        public var backend: Argon2id.Backend
        /// Wall time of the verifying run.
        public var measuredMilliseconds: Double
        /// The target asked for.
        public var targetMilliseconds: Double
        /// Derivations run to find the answer.
        public var runs: Int
    }

    /// Wall time one derivation should take.
    public var targetMilliseconds: Double
    /// Memory ceiling in KiB.
    public var maxMemoryKiB: UInt32
    /// Lanes (threads). p = 1 uses libsodium's SIMD code; p > 1 libargon2's threads.
    public var parallelism: UInt32
    /// Smallest iteration count recommended (default 2, OWASP's floor).
    public var minIterations: UInt32
    /// Times one derivation with the given parameters, in milliseconds.
    /// Replace it in tests with a model of the machine.
    public var measure: @Sendable (Argon2id.Parameters) throws(SecureCoreError) -> Double

    /// Creates a calibrator that measures real derivations.
    /// - Parameters:
    ///   - targetMilliseconds: wall time per derivation (for example 500).
    ///   - maxMemoryKiB: ceiling (default the smaller of 1 GiB and the library ceiling).
    ///   - parallelism: lanes, 1 by default.
    ///   - minIterations: at least 1; default 2.
    public init(
        targetMilliseconds: Double, maxMemoryKiB: UInt32? = nil, parallelism: UInt32 = 1, minIterations: UInt32 = 2
    ) {
        self.targetMilliseconds = targetMilliseconds
        let ceiling = UInt32(min(Argon2id.Limits.default.maxMemoryKiB, UInt64(1024 * 1024)))
        self.maxMemoryKiB = maxMemoryKiB ?? ceiling
        self.parallelism = parallelism
        self.minIterations = minIterations
        self.measure = KDFCalibrator.timeOneDerivation
    }

    /// Runs the calibration.
    /// - Parameter progress: called with a fraction in 0 ... 1 after each run.
    /// - Returns: measured parameters within ±5 % of the target when the
    ///   machine allows it, or the closest measured run after eight corrections.
    /// - Throws: ``SecureCoreError/invalidSize(_:)`` for a target ≤ 0,
    ///   ``SecureCoreError/invalidParallelism``, ``SecureCoreError/invalidMemory``
    ///   (ceiling below 8 KiB per lane), ``SecureCoreError/invalidIterations``,
    ///   and what a derivation throws.
    public func calibrate(progress: ((Double) -> Void)? = nil) throws(SecureCoreError) -> Result {
        guard targetMilliseconds > 0, targetMilliseconds.isFinite else { throw .invalidSize(0) }
        guard parallelism >= 1 else { throw .invalidParallelism }
        guard minIterations >= 1 else { throw .invalidIterations }
        let floorKiB = 8 * parallelism
        guard maxMemoryKiB >= floorKiB else { throw .invalidMemory }
        var runs = 0
        // Short targets are noisy on a busy machine: judge them by the median of three runs.
        let samplesPerPoint = targetMilliseconds < 300 ? 3 : 1
        func time(_ p: Argon2id.Parameters) throws(SecureCoreError) -> Double {
            var samples: [Double] = []
            for _ in 0..<samplesPerPoint {
                runs += 1
                samples.append(try measure(p))
            }
            progress?(min(1, Double(runs) / Double(12 * samplesPerPoint)))
            return max(samples.sorted()[samples.count / 2], 0.001)
        }

        // 1. Grow memory until one run costs a quarter of the target.
        var current = Argon2id.Parameters(
            memoryKiB: min(maxMemoryKiB, max(floorKiB, 4096)), iterations: minIterations, parallelism: parallelism)
        var elapsed = try time(current)
        while elapsed < targetMilliseconds / 4 && current.memoryKiB < maxMemoryKiB {
            let factor = min(8, max(2, (targetMilliseconds / 4) / elapsed))
            current.memoryKiB = UInt32(min(Double(maxMemoryKiB), Double(current.memoryKiB) * factor))
            elapsed = try time(current)
        }

        // 2. Extrapolate with time = k · m · t, then measure and correct.
        var best = (parameters: current, ms: elapsed)
        for _ in 0..<8 {
            if abs(best.ms - targetMilliseconds) <= 0.05 * targetMilliseconds { break }
            let k = elapsed / (Double(current.memoryKiB) * Double(current.iterations))
            current = plan(costPerKiBPass: k, floorKiB: floorKiB)
            elapsed = try time(current)
            if abs(elapsed - targetMilliseconds) < abs(best.ms - targetMilliseconds) { best = (current, elapsed) }
        }
        progress?(1)
        let backend: Argon2id.Backend = parallelism == 1 ? .libsodium : .reference
        return Result(
            parameters: best.parameters, backend: backend, measuredMilliseconds: best.ms,
            targetMilliseconds: targetMilliseconds, runs: runs)
    }

    /// Parameters expected to take the target under the model: the fewest
    /// iterations (at least the minimum) whose memory fits under the ceiling.
    func plan(costPerKiBPass k: Double, floorKiB: UInt32) -> Argon2id.Parameters {
        let work = targetMilliseconds / k  // KiB × passes
        var iterations = max(Double(minIterations), (work / Double(maxMemoryKiB)).rounded(.up))
        iterations = min(iterations, Double(Argon2id.Limits.default.maxIterations))
        var memory = min(Double(maxMemoryKiB), work / iterations)
        // Whole MiB above 8 MiB (a readable number; Argon2 rounds to 4·p KiB anyway).
        memory = memory >= 8192 ? (memory / 1024).rounded() * 1024 : memory.rounded()
        let kib = UInt32(min(Double(maxMemoryKiB), max(Double(floorKiB), memory)))
        return Argon2id.Parameters(memoryKiB: kib, iterations: UInt32(iterations), parallelism: parallelism)
    }

    /// Times one real derivation on a random 16-byte input (monotonic raw clock).
    @Sendable
    public static func timeOneDerivation(_ parameters: Argon2id.Parameters) throws(SecureCoreError) -> Double {
        let input = try SecureBytes.random(count: 16)
        let salt = try SecureRandom.bytes(count: Argon2id.minimumSaltByteCount)
        let start = monotonicNanoseconds()
        let key = try Argon2id.deriveKey(from: input, salt: salt, parameters: parameters)
        let end = monotonicNanoseconds()
        key.destroy()
        return Double(end - start) / 1_000_000
    }
}

/// Nanoseconds on a clock that NTP cannot slew (CLOCK_MONOTONIC_RAW on Linux).
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    #if os(Linux)
        clock_gettime(CLOCK_MONOTONIC_RAW, &ts)
    #else
        clock_gettime(CLOCK_MONOTONIC, &ts)
    #endif
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

extension KDFCalibrator {
    /// Calibrates for p = 1 (libsodium's SIMD code) and, when allowed, for
    /// p = `maxParallelism` (libargon2's threads), and returns whichever puts
    /// more memory × iterations — more work for an attacker — into the same
    /// wall time.
    /// - Returns: the better of the measured results.
    /// - Throws: as ``calibrate(progress:)``.
    public static func calibrateBest(
        targetMilliseconds: Double, maxMemoryKiB: UInt32, maxParallelism: UInt32, minIterations: UInt32 = 2,
        progress: ((Double) -> Void)? = nil
    ) throws(SecureCoreError) -> Result {
        let candidates: [UInt32] = maxParallelism > 1 ? [1, maxParallelism] : [1]
        var best: Result?
        for (i, p) in candidates.enumerated() {
            let calibrator = KDFCalibrator(
                targetMilliseconds: targetMilliseconds, maxMemoryKiB: maxMemoryKiB, parallelism: p,
                minIterations: minIterations)
            let share = 1 / Double(candidates.count)
            let result = try calibrator.calibrate { progress?((Double(i) + $0) * share) }
            let work = { (r: Result) in
                Double(r.parameters.memoryKiB) * Double(r.parameters.iterations) / r.measuredMilliseconds
            }
            if best == nil || work(result) > work(best!) { best = result }
        }
        return best!
    }

    /// ``calibrate(progress:)`` off the caller's executor.
    /// - Returns: as the synchronous variant.
    /// - Throws: as the synchronous variant.
    public func calibrate() async throws(SecureCoreError) -> Result {
        let copy = self
        return try await offExecutor { () throws(SecureCoreError) in try copy.calibrate(progress: nil) }
    }
}
