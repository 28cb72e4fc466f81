// libFuzzer target: the vault file reader, VaultFile.decode.
//
// The first input byte picks the mode: even, the rest is the file as is
// (exercises the magic, version and checksum guards); odd, the rest gets a
// valid BLAKE2b checksum appended, so the fuzzer reaches every later guard.
// Oracle: decode is total (a typed error, never a trap), and whatever it
// accepts encodes back, with the MAC it read, to the very same bytes.
import SecureCore

@testable import PinVault

private let floor = Argon2id.Parameters(memoryKiB: 8, iterations: 1, parallelism: 1)
private let limits = Argon2id.Limits(maxMemoryKiB: 64 * 1024, maxIterations: 16)

/// libFuzzer's entry point: runs the vault file reader on one input.
/// - Parameters:
///   - data: the input bytes.
///   - size: their count.
/// - Returns: 0 (libFuzzer's "keep going").
@_cdecl("LLVMFuzzerTestOneInput")
public func vaultFileFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    var file = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    if data[0] & 1 == 1 {
        guard let checksum = try? Digest.blake2b256(file) else { fatalError("BLAKE2b failed") }
        file += checksum
    }
    guard let decoded = try? VaultFile.decode(file, floor: floor, limits: limits) else { return 0 }
    guard let encoded = try? decoded.file.encode(mac: decoded.mac), encoded == file else {
        fatalError("a decoded vault file does not encode back to its bytes")
    }
    return 0
}
