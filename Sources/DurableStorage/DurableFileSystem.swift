/// The system calls that put bytes on disk and make them durable: a seam through which
/// tests make a write fail (`ENOSPC`), an `fsync` fail (`EIO`) or a rename fail. A failing
/// call returns -1 and sets `errno`, as the system call does.
///
/// Every requirement has a default that makes the real system call, so a test type
/// implements only the calls it makes fail.
package protocol DurableFileSystem: Sendable {
    /// `write(2)`: how many bytes were written, or -1.
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int
    /// `pwrite(2)` at `offset`: how many bytes were written, or -1.
    func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int
    /// `fsync(2)` of a file, or of a directory when `isDirectory`.
    func fsync(_ fd: Int32, isDirectory: Bool) -> Int32
    /// `rename(2)`.
    func rename(_ from: String, _ to: String) -> Int32
}

extension DurableFileSystem {
    /// The real `write(2)`.
    package func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int { Platform.writeBytes(fd, bytes) }
    /// The real `pwrite(2)`.
    package func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
        Platform.writeBytes(fd, bytes, at: offset)
    }
    /// The real `fsync(2)` (on Darwin, `F_FULLFSYNC`).
    package func fsync(_ fd: Int32, isDirectory: Bool) -> Int32 { Platform.synchronize(fd) }
    /// The real `rename(2)`.
    package func rename(_ from: String, _ to: String) -> Int32 { Platform.renameFile(from, to) }
}

/// The real system calls.
package struct SystemFileSystem: DurableFileSystem {
    /// The system.
    package init() {}
}
