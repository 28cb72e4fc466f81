import Foundation

/// Starts `executable` with `arguments`, writes `input` to its standard input and closes it.
/// - Returns: the running process and the pipe of its standard output.
public func startHelper(
    executable: String, _ arguments: [String], environment: [String: String] = [:], input: String
) throws -> (Process, Pipe) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let stdin = Pipe()
    let stdout = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    try process.run()
    stdin.fileHandleForWriting.write(Data(input.utf8))
    try stdin.fileHandleForWriting.close()
    return (process, stdout)
}
