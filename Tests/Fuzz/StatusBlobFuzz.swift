// libFuzzer target: the activation status blob parser,
// ActivationStatusBlob(plaintext:). Oracle: total, and whatever it accepts
// renders back to the same 32 bytes.
import PowerAuthProtocol

/// libFuzzer's entry point: runs the status blob parser on one input.
/// - Parameters:
///   - data: the input bytes.
///   - size: their count.
/// - Returns: 0 (libFuzzer's "keep going").
@_cdecl("LLVMFuzzerTestOneInput")
public func statusBlobFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    guard let blob = try? ActivationStatusBlob(plaintext: bytes) else { return 0 }
    if blob.plaintext != bytes { fatalError("a parsed status blob does not render back to its bytes") }
    return 0
}
