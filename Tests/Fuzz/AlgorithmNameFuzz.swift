// libFuzzer target: the configuration name parsers: ProtocolAlgorithm(name:),
// ProtocolVersion(parsing:) and FactorSet(parsing:). Oracle: total, and a
// name that parses is exactly the raw value it parses to.
import PowerAuthProtocol

/// libFuzzer's entry point: runs the name parsers on one input.
/// - Parameters:
///   - data: the input bytes.
///   - size: their count.
/// - Returns: 0 (libFuzzer's "keep going").
@_cdecl("LLVMFuzzerTestOneInput")
public func algorithmNameFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let name = String(decoding: bytes, as: UTF8.self)
    if let algorithm = try? ProtocolAlgorithm(name: name) {
        if algorithm.rawValue != name { fatalError("algorithm name is not its raw value") }
        _ = try? algorithm.requireSupported()
    }
    if let version = try? ProtocolVersion(parsing: name), version.rawValue != name {
        fatalError("version name is not its raw value")
    }
    if let factors = try? FactorSet(parsing: name), factors.rawValue != name {
        fatalError("factor set name is not its raw value")
    }
    return 0
}
