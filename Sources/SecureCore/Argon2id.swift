internal import CSecureCore

#if canImport(Dispatch)
    import Dispatch
#endif

/// Argon2id (RFC 9106, version 1.3), the memory-hard function that turns a
/// PIN or password into a key.
///
/// Two backends compute the same function: libsodium (SIMD, the fast path:
/// p = 1, 16-byte salt, no pepper, no associated data) and libargon2 (threads
/// for p > 1, a pepper, associated data). ``Backend/automatic`` picks
/// libsodium whenever it can, because the defender's KDF must be as fast as
/// the attacker's. Every parameter is checked before anything is allocated.
///
/// ```swift
/// let salt = try SecureRandom.bytes(count: 16)
/// let key = try Argon2id.deriveKey(from: password, salt: salt, parameters: .interactive)
/// ```
public enum Argon2id {
    /// Cost parameters. Not secret; store them beside the salt.
    public struct Parameters: Sendable, Hashable, Codable, CustomStringConvertible {
        /// Memory in KiB (at least 8 per lane).
        public var memoryKiB: UInt32
        /// Passes over the memory (at least 1).
        public var iterations: UInt32
        /// Lanes, computed by as many threads (1 ... 2^24-1).
        public var parallelism: UInt32

        /// Creates a parameter set; checked when used.
        public init(memoryKiB: UInt32, iterations: UInt32, parallelism: UInt32 = 1) {
            self.memoryKiB = memoryKiB
            self.iterations = iterations
            self.parallelism = parallelism
        }

        /// OWASP's floor for Argon2id: 19 MiB, t = 2, p = 1.
        public static let owaspMinimum = Parameters(memoryKiB: 19 * 1024, iterations: 2)
        /// libsodium's INTERACTIVE: 64 MiB, t = 2, p = 1.
        public static let interactive = Parameters(memoryKiB: 64 * 1024, iterations: 2)
        /// libsodium's MODERATE: 256 MiB, t = 3, p = 1.
        public static let moderate = Parameters(memoryKiB: 256 * 1024, iterations: 3)
        /// RFC 9106's second recommendation: 64 MiB, t = 3, p = 4.
        public static let rfc9106LowMemory = Parameters(memoryKiB: 64 * 1024, iterations: 3, parallelism: 4)

        /// `m=65536 KiB, t=3, p=1`.
        public var description: String { "m=\(memoryKiB) KiB, t=\(iterations), p=\(parallelism)" }
    }

    /// Which implementation computes the function.
    public enum Backend: String, Sendable, Codable, CaseIterable {
        /// libsodium when it can take the input, libargon2 otherwise.
        case automatic
        /// libsodium: SIMD, p = 1, 16-byte salt, no pepper or associated data.
        case libsodium
        /// libargon2 (Debian's reference build): threads, pepper, associated data.
        case reference
    }

    /// Ceilings checked before any work, so hostile parameters (a tampered
    /// file, a malicious server) cannot exhaust the machine.
    public struct Limits: Sendable, Hashable {
        /// Largest memory accepted, in KiB.
        public var maxMemoryKiB: UInt64
        /// Largest iteration count accepted.
        public var maxIterations: UInt32

        /// Creates ceilings.
        public init(maxMemoryKiB: UInt64, maxIterations: UInt32) {
            self.maxMemoryKiB = maxMemoryKiB
            self.maxIterations = maxIterations
        }

        /// The smaller of 4 GiB and half of physical memory; 64 iterations.
        public static var `default`: Limits {
            var limits = spc_kdf_limits()
            _ = spc_kdf_limits_default(&limits)
            return Limits(maxMemoryKiB: limits.max_m_cost_kib, maxIterations: limits.max_t_cost)
        }
    }

    /// Smallest accepted salt, in bytes.
    public static let minimumSaltByteCount = Int(SPC_KDF_SALT_MIN)
    /// Accepted derived-key lengths, in bytes.
    public static let outputByteCountRange = Int(SPC_KDF_OUTPUT_MIN)...Int(SPC_KDF_OUTPUT_MAX)

    /// Checks parameters, salt and output lengths against RFC 9106 and the
    /// ceilings without doing any work.
    /// - Throws: ``SecureCoreError/invalidIterations``, ``SecureCoreError/invalidParallelism``,
    ///   ``SecureCoreError/invalidMemory``, ``SecureCoreError/saltTooShort(minimum:)``,
    ///   ``SecureCoreError/invalidOutputLength(_:)``, ``SecureCoreError/memoryAboveCeiling``.
    public static func validate(
        _ parameters: Parameters, saltByteCount: Int, outputByteCount: Int, limits: Limits = .default
    ) throws(SecureCoreError) {
        var p = cParameters(parameters)
        var l = cLimits(limits)
        try check(
            spc_kdf_argon2id_check(&p, &l, saltByteCount, outputByteCount), index: minimumSaltByteCount,
            length: outputByteCount)
    }

    /// Derives a key from a password.
    /// - Parameters:
    ///   - password: revealed only for the duration of the call.
    ///   - salt: at least 16 random bytes, unique per password and per use.
    ///   - parameters: the cost.
    ///   - outputByteCount: 16 ... 64 bytes (default 32).
    ///   - pepper: an optional secret kept outside the stored data (libargon2's secret input).
    ///   - associatedData: optional context bound into the key (libargon2).
    ///   - limits: ceilings checked first.
    ///   - backend: which implementation (default: the fastest that can).
    /// - Returns: the key, in secure memory.
    /// - Throws: the errors of ``validate(_:saltByteCount:outputByteCount:limits:)``,
    ///   ``SecureCoreError/unsupported`` (libsodium forced for input it cannot take),
    ///   ``SecureCoreError/keyDerivationFailed``, ``SecureCoreError/destroyed``.
    public static func deriveKey(
        from password: Password, salt: [UInt8], parameters: Parameters, outputByteCount: Int = 32,
        pepper: SecureBytes? = nil, associatedData: [UInt8] = [], limits: Limits = .default,
        backend: Backend = .automatic
    ) throws(SecureCoreError) -> SecureBytes {
        try derive(
            from: .password(password), salt: salt, parameters: parameters, outputByteCount: outputByteCount,
            pepper: pepper, associatedData: associatedData, limits: limits, backend: backend
        ).key
    }

    /// Derives a key from secret bytes (a high-entropy secret, or a password
    /// already held as bytes). Same contract as the `Password` variant.
    /// - Returns: the key, in secure memory.
    /// - Throws: as the `Password` variant of `deriveKey(from:salt:parameters:outputByteCount:pepper:associatedData:limits:backend:)`.
    public static func deriveKey(
        from secret: SecureBytes, salt: [UInt8], parameters: Parameters, outputByteCount: Int = 32,
        pepper: SecureBytes? = nil, associatedData: [UInt8] = [], limits: Limits = .default,
        backend: Backend = .automatic
    ) throws(SecureCoreError) -> SecureBytes {
        try derive(
            from: .bytes(secret), salt: salt, parameters: parameters, outputByteCount: outputByteCount,
            pepper: pepper, associatedData: associatedData, limits: limits, backend: backend
        ).key
    }

    /// Derives a key from a password off the caller's executor: the work runs
    /// on a Dispatch queue, so a long derivation never blocks the cooperative
    /// thread pool. Same contract as the synchronous variant.
    /// - Returns: the key, in secure memory.
    /// - Throws: as the synchronous variant.
    public static func deriveKey(
        from password: Password, salt: [UInt8], parameters: Parameters, outputByteCount: Int = 32,
        pepper: SecureBytes? = nil, associatedData: [UInt8] = [], limits: Limits = .default,
        backend: Backend = .automatic
    ) async throws(SecureCoreError) -> SecureBytes {
        try await offExecutor { () throws(SecureCoreError) in
            try deriveKey(
                from: password, salt: salt, parameters: parameters, outputByteCount: outputByteCount,
                pepper: pepper, associatedData: associatedData, limits: limits, backend: backend)
        }
    }

    /// The input of one derivation.
    enum Input {
        case password(Password)
        case bytes(SecureBytes)
    }

    /// Derives and reports which backend ran (the calibrator needs to know).
    static func derive(
        from input: Input, salt: [UInt8], parameters: Parameters, outputByteCount: Int, pepper: SecureBytes?,
        associatedData: [UInt8], limits: Limits, backend: Backend
    ) throws(SecureCoreError) -> (key: SecureBytes, backend: Backend) {
        try validate(parameters, saltByteCount: salt.count, outputByteCount: outputByteCount, limits: limits)
        let key = try SecureBytes(count: outputByteCount)
        var used: Int32 = 0
        let run = { (password: UnsafeRawBufferPointer, pepperBytes: UnsafeRawBufferPointer) throws(SecureCoreError) in
            try key.withHandle { (out) throws(SecureCoreError) in
                try salt.withUnsafeBufferPointer { (saltBytes) throws(SecureCoreError) in
                    try associatedData.withUnsafeBufferPointer { (adBytes) throws(SecureCoreError) in
                        var cInput = spc_argon2_input(
                            password: password.baseAddress?.assumingMemoryBound(to: UInt8.self),
                            password_len: password.count,
                            salt: saltBytes.baseAddress,
                            salt_len: saltBytes.count,
                            secret: pepperBytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                            secret_len: pepperBytes.count,
                            ad: adBytes.baseAddress, ad_len: adBytes.count)
                        var p = cParameters(parameters)
                        var l = cLimits(limits)
                        try check(
                            spc_kdf_argon2id(&cInput, &p, &l, cBackend(backend), out, &used),
                            index: minimumSaltByteCount, length: outputByteCount)
                    }
                }
            }
        }
        switch input {
        case .password(let password):
            // The reveal holds the password's lock only while revealing, so one lock at a time here.
            try password.withUnsafeUTF8Bytes { (revealed) throws(SecureCoreError) in
                try withOpenBytes(pepper) { (pepperBytes) throws(SecureCoreError) in try run(revealed, pepperBytes) }
            }
        case .bytes(let bytes):
            // Input and pepper locked together, in the global order (once if they are the same object).
            try withOpenBytes(bytes, pepper) { (input, pepperBytes) throws(SecureCoreError) in
                try run(input, pepperBytes)
            }
        }
        return (key, used == SPC_ARGON2_LIBSODIUM ? .libsodium : .reference)
    }

    static func cParameters(_ p: Parameters) -> spc_argon2_params {
        spc_argon2_params(t_cost: p.iterations, m_cost_kib: p.memoryKiB, parallelism: p.parallelism)
    }

    static func cLimits(_ l: Limits) -> spc_kdf_limits {
        spc_kdf_limits(max_m_cost_kib: l.maxMemoryKiB, max_t_cost: l.maxIterations)
    }

    static func cBackend(_ b: Backend) -> Int32 {
        switch b {
        case .automatic: SPC_ARGON2_AUTO
        case .libsodium: SPC_ARGON2_LIBSODIUM
        case .reference: SPC_ARGON2_REFERENCE
        }
    }
}

/// Runs blocking work on a Dispatch queue and resumes the caller when done,
/// so CPU-heavy derivations never occupy the cooperative thread pool. The
/// work's own error arrives with its own type.
package func offExecutor<R: Sendable, E: Error>(
    _ work: @escaping @Sendable () throws(E) -> R
) async throws(E) -> R {
    let result: Result<R, E> = await withCheckedContinuation { continuation in
        DispatchQueue.global(qos: .userInitiated).async {
            do throws(E) {
                continuation.resume(returning: .success(try work()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    return try result.get()
}
