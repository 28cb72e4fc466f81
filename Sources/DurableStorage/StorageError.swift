#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why a storage operation failed. Every case says what was left on disk.
package enum StorageError: Error, Equatable, Sendable {
    /// A system call failed: the step (for example `"fsync vault"`) and the `errno` it left.
    /// A failed replacement left the old file as it was, and no temporary file.
    case system(operation: String, errno: Int32)
    /// A replacement's rename happened, but the directory could not be made durable
    /// afterwards: the new content is visible, and a crash may still bring back the old file.
    /// The caller may retry ``DurableFile/syncDirectory(_:fileSystem:)`` or roll back.
    case notDurable(operation: String, errno: Int32)
    /// The file is larger than the reader's limit; nothing of it was read.
    case tooLarge(name: String, size: Int, limit: Int)
    /// The file's length changed while it was read (it is not one of the files this
    /// module writes, which are only ever replaced whole).
    case changedWhileRead(name: String)
    /// The name is not a regular file (a directory, a device, a pipe); nothing was read.
    case notARegularFile(name: String)
    /// The directory cannot serve as private storage; `reason` says why and what to do.
    /// Nothing was changed.
    case unsuitableDirectory(reason: String)

    /// The step that failed, or what was refused.
    package var operation: String {
        switch self {
        case .system(let operation, _), .notDurable(let operation, _): operation
        case .tooLarge(let name, let size, let limit): "read \(name): \(size) bytes, more than \(limit)"
        case .changedWhileRead(let name): "read \(name): it changed while it was read"
        case .notARegularFile(let name): "open \(name): not a regular file"
        case .unsuitableDirectory(let reason): reason
        }
    }

    /// The `errno` of a failed system call, nil for the other cases.
    package var errno: Int32? {
        switch self {
        case .system(_, let errno), .notDurable(_, let errno): errno
        default: nil
        }
    }

    /// Whether a system call failed because a name does not exist (`ENOENT`).
    package var isMissing: Bool { errno == ENOENT }
}

/// An error type that a ``StorageError`` becomes: each module that stores files (the vault, the
/// activation store) names the case of its own error that stands for each kind of failure.
package protocol StorageErrorConvertible: Error {
    /// A system call failed, with the step and its `errno`.
    static func storageFailed(operation: String, errno: Int32) -> Self
    /// A file is not what this module writes: larger than its limit, changed while it was
    /// read, or not a regular file.
    static func storageDamaged(reason: String) -> Self
    /// A directory was refused as private storage, and left as it was.
    static func storageRefused(reason: String) -> Self
}

extension StorageErrorConvertible {
    /// `failure` as this error.
    package init(_ failure: StorageError) {
        switch failure {
        case .system(let operation, let errno), .notDurable(let operation, let errno):
            self = .storageFailed(operation: operation, errno: errno)
        case .tooLarge(let name, _, _): self = .storageDamaged(reason: "\(name) is larger than any valid file")
        case .changedWhileRead(let name): self = .storageDamaged(reason: "\(name) changed while it was read")
        case .notARegularFile(let name): self = .storageDamaged(reason: "\(name) is not a regular file")
        case .unsuitableDirectory(let reason): self = .storageRefused(reason: reason)
        }
    }

    /// Runs a storage step, its failure as this error.
    package static func converting<R>(_ body: () throws(StorageError) -> R) throws(Self) -> R {
        do throws(StorageError) { return try body() } catch { throw Self(error) }
    }
}
