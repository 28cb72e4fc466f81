import Spawn

/// Starts `executable` with `arguments`, writes `input` to its standard input and closes it.
/// - Parameters:
///   - executable: the program.
///   - arguments: its arguments.
///   - environment: variables added to (or replacing those of) the parent's environment.
///   - input: what it reads on its standard input (test PINs only, never a real secret).
/// - Returns: the running child and the pipe of its standard output.
/// - Throws: ``SpawnError`` when it cannot be started or the input cannot be written.
public func startHelper(
    executable: String, _ arguments: [String], environment: [String: String] = [:], input: String
) throws(SpawnError) -> (ChildProcess, PipeReader) {
    let child = try ChildProcess(
        executable: executable, arguments: arguments,
        environment: environment.isEmpty ? nil : ChildProcess.inheritedEnvironment.merging(environment) { $1 },
        standardInput: .pipe, standardOutput: .pipe, standardError: .inherit)
    // Both pipes exist: they were asked for, and the initialiser returns only with them.
    let stdin = child.standardInput!
    defer { stdin.close() }
    try stdin.write(input)
    return (child, child.standardOutput!)
}
