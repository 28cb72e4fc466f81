// libFuzzer target: the reference server's request handling
// (ActivationServer.respond(to:): path routing, JSON envelope and field
// parsing, the authorization header), on an in-memory server that holds one
// prepared and one unknown activation. Input layout: byte 0 picks the path,
// byte 1 the length of an X-PowerAuth-Authorization value that follows, the
// rest is the body. Oracle: total, the status is 200 or an error status, and
// every error carries PowerAuth's JSON error body.
import ActivationServer
import Foundation
import PowerAuthProtocol

let fuzzServer: ActivationServer = {
    do {
        let server = try ActivationServer(configuration: ActivationServerConfiguration.generate())
        _ = try server.initActivation(userId: "fuzz")
        return server
    } catch {
        fatalError("the fuzz server could not start: \(error)")
    }
}()

let fuzzPaths = [
    "/pa/v3/activation/create", "/pa/v3/activation/status", "/pa/v3/activation/remove",
    "/pa/v3/signature/validate", "/pa/v3/vault/unlock", "/pa/v3/token/create", "/pa/v3/token/remove",
    "/pa/v3/user/info", "/pa/v3/upgrade/start", "/pa/v3/upgrade/commit", "/pa/v3/activation/detail",
    "/pa/v3/keystore/create", "/pa/v3/status", "/pa/v3/unknown", "",
]

/// The header the fuzzed value goes into, chosen by the first byte's high bits.
let fuzzHeaders = ["X-PowerAuth-Authorization", "X-PowerAuth-Encryption", "X-PowerAuth-Token"]

/// libFuzzer's entry point: one request through the server.
/// - Parameters:
///   - data: the input bytes.
///   - size: their count.
/// - Returns: 0 (libFuzzer's "keep going").
@_cdecl("LLVMFuzzerTestOneInput")
public func serverRequestFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    guard bytes.count >= 2 else { return 0 }
    let path = fuzzPaths[Int(bytes[0] & 0x0F) % fuzzPaths.count]
    let headerName = fuzzHeaders[Int(bytes[0] >> 4) % fuzzHeaders.count]
    let headerLength = min(Int(bytes[1]), bytes.count - 2)
    var headers = ["Content-Type": "application/json"]
    if headerLength > 0 {
        headers[headerName] = String(decoding: bytes[2..<(2 + headerLength)], as: UTF8.self)
    }
    let body = Array(bytes[(2 + headerLength)...])
    let response = fuzzServer.respond(to: TransportRequest(path: path, headers: headers, body: body))
    guard response.statusCode != 200 else { return 0 }
    guard (400..<600).contains(response.statusCode),
        let json = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
        json["status"] as? String == "ERROR"
    else { fatalError("status \(response.statusCode) without PowerAuth's error body") }
    return 0
}
