import Foundation

/// Executables the build puts beside the test bundle (test helpers, `securepin`, demos).
public enum BuiltExecutable {
    /// The executable is not in the build directory.
    public struct NotFound: Error, CustomStringConvertible {
        /// Its name.
        public var name: String
        /// A sentence naming it.
        public var description: String { "\(name) not found next to the test bundle" }
    }

    /// The path of `name`, searched from the test binary's directory upwards (the binary may
    /// sit inside an `.xctest` bundle directory).
    /// - Parameter name: the product name, for example `spc-test-helper`.
    /// - Returns: its path.
    /// - Throws: ``NotFound``.
    public static func path(_ name: String) throws -> String {
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var directory = URL(fileURLWithPath: exe).deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw NotFound(name: name)
    }
}
