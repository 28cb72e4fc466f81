import PowerAuthProtocol
import SecureCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// ``DeviceActivationStorage`` in a directory: mode 0700, files 0600; every write
/// goes to a temporary file that is fsynced, renamed over the old one, and
/// followed by an fsync of the directory. Secret blobs are read into and
/// written from secure memory directly.
public struct FileActivationStorage: DeviceActivationStorage {
    /// Largest blob accepted; anything larger is damaged data.
    public static let maximumBlobSize = 1 << 16
    /// The name of the lock file.
    static let lockName = ".lock"

    /// The directory.
    public let directory: String

    /// Uses `directory`, creating it (0700) when it is missing and taking
    /// away the group's and others' access when it has any.
    /// - Parameter directory: an absolute path.
    /// - Throws: ``ActivationError/storage(operation:errno:)``.
    public init(directory: String) throws(ActivationError) {
        self.directory = directory
        do throws(DurableFile.Failure) { try DurableFile.prepareDirectory(directory) } catch {
            throw .storage(operation: error.operation, errno: error.errno)
        }
    }

    private func path(_ name: String) -> String { directory + "/" + name }

    /// Reads a public blob.
    public func read(_ name: String) throws(ActivationError) -> [UInt8]? {
        guard let (fd, size) = try openForReading(name) else { return nil }
        defer { close(fd) }
        var out = [UInt8](repeating: 0, count: size)
        let n = out.withUnsafeMutableBytes { readFully(fd, $0) }
        guard n == size else { throw .invalidActivationData(reason: "\(name) changed while it was read") }
        return out
    }

    /// Replaces a public blob atomically.
    public func write(_ name: String, _ bytes: [UInt8]) throws(ActivationError) {
        var failure: ActivationError?
        bytes.withUnsafeBytes { buffer in
            do throws(ActivationError) { try replace(name, buffer) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Reads a secret blob into secure memory.
    public func readSecret(_ name: String) throws(ActivationError) -> SecureBytes? {
        guard let (fd, size) = try openForReading(name) else { return nil }
        defer { close(fd) }
        let out = try coreStep { () throws(SecureCoreError) in try SecureBytes(count: max(size, 1)) }
        let n = out.withUnsafeMutableBytes { readFully(fd, UnsafeMutableRawBufferPointer(rebasing: $0[0..<size])) }
        guard n == size, size > 0 else {
            out.destroy()
            throw .invalidActivationData(reason: "\(name) is empty or changed while it was read")
        }
        return out
    }

    /// Replaces a secret blob atomically from secure memory.
    public func writeSecret(_ name: String, _ bytes: SecureBytes) throws(ActivationError) {
        try bytes.withUnsafeBytes { (buffer) throws(ActivationError) in try replace(name, buffer) }
    }

    /// Overwrites with zeros, deletes, and syncs the directory.
    public func remove(_ name: String) throws(ActivationError) {
        let fd = open(path(name), O_WRONLY | O_CLOEXEC)
        if fd >= 0 {
            var st = stat()
            if fstat(fd, &st) == 0, st.st_size > 0 {
                let zeros = [UInt8](repeating: 0, count: Int(st.st_size))
                _ = zeros.withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, $0.count) }
                _ = fsync(fd)
            }
            close(fd)
        }
        if unlink(path(name)) != 0 && errno != ENOENT { throw .storage(operation: "unlink", errno: errno) }
        do throws(DurableFile.Failure) { try DurableFile.syncDirectory(directory) } catch {
            throw .storage(operation: error.operation, errno: error.errno)
        }
    }

    /// Holds `flock(LOCK_EX)` on the directory's lock file while `body` runs.
    public func withExclusiveAccess<R>(_ body: () throws(ActivationError) -> R) throws(ActivationError) -> R {
        let fd = open(path(Self.lockName), O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .storage(operation: "open lock", errno: errno) }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw .storage(operation: "flock", errno: errno) }
        }
        return try body()
    }

    private func openForReading(_ name: String) throws(ActivationError) -> (Int32, Int)? {
        let fd = open(path(name), O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw .storage(operation: "open", errno: errno)
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = errno
            close(fd)
            throw .storage(operation: "fstat", errno: e)
        }
        guard st.st_size <= Self.maximumBlobSize else {
            close(fd)
            throw .invalidActivationData(reason: "\(name) is larger than any valid blob")
        }
        return (fd, Int(st.st_size))
    }

    private func readFully(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        var done = 0
        while done < buffer.count {
            let n = Glibc.read(fd, buffer.baseAddress! + done, buffer.count - done)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            done += n
        }
        return done
    }

    private func replace(_ name: String, _ buffer: UnsafeRawBufferPointer) throws(ActivationError) {
        do throws(DurableFile.Failure) { try DurableFile.replace(name, in: directory, with: buffer) } catch {
            throw .storage(operation: error.operation, errno: error.errno)
        }
    }
}
