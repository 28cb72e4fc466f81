#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why starting, waiting for, signalling or talking to a child process failed: the step and the
/// error number the system returned.
public struct SpawnError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The step that failed.
    public enum Operation: String, Equatable, Sendable {
        /// Creating a pipe.
        case pipe
        /// Preparing the spawn (attributes, file actions) or `posix_spawn` itself; a missing or
        /// non-executable program is reported here (`ENOENT`, `EACCES`).
        case spawn
        /// `waitid` or `waitpid`.
        case wait
        /// `kill`.
        case signal
        /// Reading from the child's output.
        case read
        /// Writing to the child's input (`EPIPE` when it has closed its end).
        case write
    }

    /// The step that failed.
    public var operation: Operation
    /// The error number (`ENOENT`, `EPIPE`, …).
    public var code: Int32
    /// The program concerned.
    public var executable: String

    /// A failed step.
    /// - Parameters:
    ///   - operation: the step.
    ///   - code: the error number.
    ///   - executable: the program concerned.
    public init(_ operation: Operation, code: Int32, executable: String) {
        self.operation = operation
        self.code = code
        self.executable = executable
    }

    /// For example `spawn /usr/bin/missing: No such file or directory, error number 2`.
    public var description: String {
        "\(operation.rawValue) \(executable): \(String(cString: strerror(code))), error number \(code)"
    }
}
