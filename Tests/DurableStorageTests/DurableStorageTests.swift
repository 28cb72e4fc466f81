import DurableStorage
import Foundation
import Spawn
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A fresh directory (0700) for one test.
func scratchDirectory() -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("spc-storage-\(UUID().uuidString)").path
    mkdir(path, 0o700)
    return path
}

func contents(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { [UInt8]($0) } }

func names(_ directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
}

func permissions(_ path: String) -> UInt32 {
    var st = stat()
    guard lstat(path, &st) == 0 else { return 0 }
    return UInt32(st.st_mode) & 0o7777
}

/// The real system calls, except the one a test makes fail; it records every write.
final class FaultyFileSystem: DurableFileSystem, @unchecked Sendable {
    enum Fault {
        /// The first write puts `afterBytes` bytes down (when more than 0), then the disk is full.
        case writeNoSpace(afterBytes: Int)
        case fileSync
        case rename
        case directorySync
    }

    private let state: Mutex<(fault: Fault?, writes: [[UInt8]], fileSyncs: Int)>
    private let system = SystemFileSystem()

    init(_ fault: Fault? = nil) { state = Mutex((fault, [], 0)) }

    /// Every buffer written in place, in order.
    var writes: [[UInt8]] { state.withLock { $0.writes } }
    /// How many file fsyncs succeeded.
    var fileSyncs: Int { state.withLock { $0.fileSyncs } }

    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        guard case .writeNoSpace(let afterBytes) = state.withLock({ $0.fault }) else {
            return system.write(fd, bytes)
        }
        if afterBytes > 0 {
            state.withLock { $0.fault = .writeNoSpace(afterBytes: 0) }
            return system.write(fd, UnsafeRawBufferPointer(rebasing: bytes[0..<min(afterBytes, bytes.count)]))
        }
        errno = ENOSPC
        return -1
    }

    func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
        state.withLock { $0.writes.append([UInt8](bytes)) }
        return system.pwrite(fd, bytes, at: offset)
    }

    func fsync(_ fd: Int32, isDirectory: Bool) -> Int32 {
        let fault = state.withLock { $0.fault }
        if case .fileSync = fault, !isDirectory { return fail(EIO) }
        if case .directorySync = fault, isDirectory { return fail(EIO) }
        let result = system.fsync(fd, isDirectory: isDirectory)
        if result == 0 && !isDirectory { state.withLock { $0.fileSyncs += 1 } }
        return result
    }

    func rename(_ from: String, _ to: String) -> Int32 {
        if case .rename = state.withLock({ $0.fault }) { return fail(EXDEV) }
        return system.rename(from, to)
    }

    private func fail(_ code: Int32) -> Int32 {
        errno = code
        return -1
    }
}

func replace(
    _ name: String, in directory: String, with bytes: [UInt8], _ fileSystem: any DurableFileSystem = SystemFileSystem()
) throws(StorageError) {
    let result: Result<Void, StorageError> = bytes.withUnsafeBytes { buffer in
        do throws(StorageError) {
            return .success(try DurableFile.replace(name, in: directory, with: buffer, fileSystem: fileSystem))
        } catch { return .failure(error) }
    }
    try result.get()
}

@Suite("Atomic replacement")
struct ReplaceTests {
    let old = [UInt8](repeating: 0x11, count: 300)
    let new = [UInt8](repeating: 0x22, count: 200_000)

    @Test("a replacement writes the new content, mode 0600, and leaves no temporary file")
    func replaces() throws {
        let directory = scratchDirectory()
        try replace("state", in: directory, with: old)
        try replace("state", in: directory, with: new)
        #expect(contents(directory + "/state") == new)
        #expect(permissions(directory + "/state") == 0o600)
        #expect(names(directory) == ["state"])
    }

    @Test(
        "a failed write, file fsync or rename leaves the old file intact and no temporary file",
        arguments: [
            (FaultyFileSystem.Fault.writeNoSpace(afterBytes: 0), "write state", ENOSPC),
            (.writeNoSpace(afterBytes: 4096), "write state", ENOSPC),
            (.fileSync, "fsync state", EIO),
            (.rename, "rename state", EXDEV),
        ])
    func failureKeepsTheOldFile(fault: FaultyFileSystem.Fault, operation: String, code: Int32) throws {
        let directory = scratchDirectory()
        try replace("state", in: directory, with: old)
        #expect(throws: StorageError.system(operation: operation, errno: code)) {
            try replace("state", in: directory, with: new, FaultyFileSystem(fault))
        }
        #expect(contents(directory + "/state") == old)
        #expect(names(directory) == ["state"])
        // And the next replacement, without the fault, goes through.
        try replace("state", in: directory, with: new)
        #expect(contents(directory + "/state") == new)
    }

    @Test("a failed directory fsync after the rename says the new file is in place but not durable")
    func directorySyncFailure() throws {
        let directory = scratchDirectory()
        try replace("state", in: directory, with: old)
        #expect(throws: StorageError.notDurable(operation: "fsync directory after replacing state", errno: EIO)) {
            try replace("state", in: directory, with: new, FaultyFileSystem(.directorySync))
        }
        #expect(contents(directory + "/state") == new)
        #expect(names(directory) == ["state"])
    }

    @Test("a replacement into a missing directory fails and creates nothing")
    func missingDirectory() {
        let directory = scratchDirectory() + "/missing"
        #expect(throws: StorageError.system(operation: "create state", errno: ENOENT)) {
            try replace("state", in: directory, with: old)
        }
        #expect(!DurableFile.exists(directory))
    }

    @Test("the temporary file's name is recognised for its file only")
    func temporaryNames() {
        #expect(DurableFile.isTemporary(DurableFile.temporaryName("vault"), for: "vault"))
        #expect(DurableFile.isTemporary(".vault.123.tmp", for: "vault"))
        #expect(!DurableFile.isTemporary(".vault.123.tmp", for: "failures"))
        #expect(!DurableFile.isTemporary("vault", for: "vault"))
    }
}

@Suite("Bounded reads")
struct ReadTests {
    @Test("a file larger than the limit is refused before anything is read")
    func oversized() throws {
        let directory = scratchDirectory()
        try replace("blob", in: directory, with: [UInt8](repeating: 7, count: 1025))
        #expect(throws: StorageError.tooLarge(name: "blob", size: 1025, limit: 1024)) {
            try DurableFile.read(directory + "/blob", limit: 1024)
        }
        #expect(try DurableFile.read(directory + "/blob", limit: 1025) == [UInt8](repeating: 7, count: 1025))
    }

    @Test("a missing file is nil; an empty one is empty")
    func missingAndEmpty() throws {
        let directory = scratchDirectory()
        #expect(try DurableFile.read(directory + "/none", limit: 10) == nil)
        try replace("empty", in: directory, with: [])
        #expect(try DurableFile.read(directory + "/empty", limit: 10) == [])
    }

    @Test("a directory, a pipe or a symbolic link is refused, and reading a pipe does not block")
    func notRegularFiles() throws {
        let directory = scratchDirectory()
        #expect(mkdir(directory + "/dir", 0o700) == 0)
        #expect(throws: StorageError.notARegularFile(name: "dir")) {
            try DurableFile.read(directory + "/dir", limit: 10)
        }
        #expect(mkfifo(directory + "/pipe", 0o600) == 0)
        #expect(throws: StorageError.notARegularFile(name: "pipe")) {
            try DurableFile.read(directory + "/pipe", limit: 10)
        }
        try replace("real", in: directory, with: [1, 2, 3])
        #expect(symlink(directory + "/real", directory + "/link") == 0)
        #expect(throws: StorageError.system(operation: "open link", errno: ELOOP)) {
            try DurableFile.read(directory + "/link", limit: 10)
        }
    }

    @Test("a secret is read into the caller's buffer, through the open file")
    func readIntoBuffer() throws {
        let directory = scratchDirectory()
        try replace("key", in: directory, with: Array(0..<32))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 1)
        defer { buffer.deallocate() }
        let n = try DurableFile.withFile(directory + "/key", .read, limit: 32, failure: { $0 }) {
            (file) throws(StorageError) in
            #expect(file.size == 32)
            return try file.read(into: buffer, at: 8)
        }
        #expect(n == 16)
        #expect([UInt8](buffer) == Array(8..<24))
    }
}

@Suite("Overwrite in place")
struct OverwriteTests {
    @Test("the file's own blocks are overwritten: random, fsync, zeros, fsync, same inode")
    func overwritesTheSameInode() throws {
        let directory = scratchDirectory()
        let original = [UInt8](repeating: 0xA5, count: 100_000)
        try replace("key", in: directory, with: original)
        // A second name for the same inode sees what the overwrite did to the file's own blocks.
        #expect(link(directory + "/key", directory + "/witness") == 0)
        let fileSystem = FaultyFileSystem()
        try DurableFile.overwriteInPlace(directory + "/key", fileSystem: fileSystem)
        #expect(contents(directory + "/witness") == [UInt8](repeating: 0, count: original.count))
        let written = fileSystem.writes.flatMap { $0 }
        #expect(written.count == 2 * original.count, "two passes over the whole file")
        let randomPass = Array(written.prefix(original.count))
        #expect(randomPass != original && Set(randomPass).count > 200, "a first pass of random bytes")
        #expect(written.dropFirst(original.count).allSatisfy { $0 == 0 }, "then a pass of zeros")
        #expect(fileSystem.fileSyncs == 2)
        #expect(try DurableFile.remove(directory + "/key"))
        #expect(try !DurableFile.remove(directory + "/key"))
    }

    @Test("a missing file is no error; part of a file is overwritten and the rest kept")
    func partial() throws {
        let directory = scratchDirectory()
        try DurableFile.overwriteInPlace(directory + "/none")
        try replace("key", in: directory, with: [UInt8](repeating: 9, count: 64))
        _ = try DurableFile.withFile(directory + "/key", .update, failure: { $0 }) { (file) throws(StorageError) in
            try file.overwrite(offset: 16, count: 32)
        }
        #expect(
            contents(directory + "/key")
                == [UInt8](repeating: 9, count: 16) + [UInt8](repeating: 0, count: 32)
                + [UInt8](repeating: 9, count: 16))
    }

    @Test("a write that fails in place is reported")
    func failedWrite() throws {
        let directory = scratchDirectory()
        try replace("key", in: directory, with: [1, 2, 3])
        #expect(throws: StorageError.system(operation: "fsync key", errno: EIO)) {
            try DurableFile.overwriteInPlace(directory + "/key", fileSystem: FaultyFileSystem(.fileSync))
        }
    }
}

@Suite("Advisory lock")
struct LockTests {
    /// Whether another descriptor of this process gets the lock without waiting.
    func otherDescriptorLocks(_ path: String) -> Bool {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return flock(fd, LOCK_EX | LOCK_NB) == 0
    }

    /// Whether another process (util-linux `flock -n`) gets the lock without waiting.
    func otherProcessLocks(_ path: String) throws -> Bool {
        let other = try ChildProcess.run(
            "/usr/bin/flock", ["-n", path, "true"], standardInput: .inherit, standardOutput: .inherit)
        return other.termination == .exited(0)
    }

    @Test("the lock excludes another descriptor and another process, and is released after the body")
    func excludes() throws {
        let directory = scratchDirectory()
        let path = directory + "/lock"
        let seen = try DurableFile.withExclusiveLock(path, failure: { $0 }) { (held) throws(StorageError) in
            (held, otherDescriptorLocks(path), (try? otherProcessLocks(path)) ?? true)
        }
        #expect(seen.0, "the lock was held")
        #expect(!seen.1, "another descriptor took the lock while it was held")
        #expect(!seen.2, "another process took the lock while it was held")
        #expect(permissions(path) == 0o600)
        #expect(otherDescriptorLocks(path))
        #expect(try otherProcessLocks(path))
    }

    @Test("a waiter whose lock file was removed meanwhile locks the file that is there now")
    func relocksAReplacedFile() async throws {
        let directory = scratchDirectory()
        let path = directory + "/lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(flock(fd, LOCK_EX) == 0)
        let waiter = Task.detached { () -> Bool in
            (try? DurableFile.withExclusiveLock(path, failure: { $0 }) { (_) throws(StorageError) in
                // Held on the file now at `path`: nobody else can take that one.
                !otherDescriptorLocks(path)
            }) ?? false
        }
        try await Task.sleep(for: .milliseconds(200))
        unlink(path)  // what destroying a vault does while it holds the lock
        close(fd)
        #expect(await waiter.value)
        #expect(DurableFile.exists(path))
    }

    @Test("a missing directory is reported, not created")
    func missingDirectory() {
        let path = scratchDirectory() + "/gone/lock"
        #expect(throws: StorageError.system(operation: "open lock", errno: ENOENT)) {
            try DurableFile.withExclusiveLock(path, failure: { $0 }) { (_) throws(StorageError) in }
        }
    }
}

@Suite("Private directories")
struct DirectoryTests {
    @Test("a missing directory is created 0700")
    func creates() throws {
        let path = scratchDirectory() + "/store"
        try DurableFile.preparePrivateDirectory(path)
        #expect(permissions(path) == 0o700)
        try DurableFile.preparePrivateDirectory(path)
        #expect(permissions(path) == 0o700)
    }

    @Test(
        "a directory only the group or others can read or search is closed to them", arguments: [0o755, 0o750, 0o701])
    func tightens(mode: Int) throws {
        let path = scratchDirectory() + "/store"
        #expect(mkdir(path, 0o700) == 0 && chmod(path, mode_t(mode)) == 0)
        try DurableFile.preparePrivateDirectory(path)
        #expect(permissions(path) == 0o700)
    }

    @Test(
        "a directory the group or others can write is refused and left as it is",
        arguments: [0o775, 0o777, 0o757, 0o1777])
    func refusesWritable(mode: Int) throws {
        let path = scratchDirectory() + "/store"
        #expect(mkdir(path, 0o700) == 0 && chmod(path, mode_t(mode)) == 0)
        let error = #expect(throws: StorageError.self) { try DurableFile.preparePrivateDirectory(path) }
        guard case .unsuitableDirectory(let reason) = error else {
            Issue.record("refused for another reason: \(String(describing: error))")
            return
        }
        #expect(reason.contains("writable by the group or others"))
        #expect(permissions(path) == UInt32(mode))
    }

    @Test("a symbolic link or a file is refused, and what it points to is not changed")
    func refusesLinksAndFiles() throws {
        let base = scratchDirectory()
        #expect(mkdir(base + "/target", 0o755) == 0 && chmod(base + "/target", 0o755) == 0)
        #expect(symlink(base + "/target", base + "/link") == 0)
        #expect(throws: StorageError.self) { try DurableFile.preparePrivateDirectory(base + "/link") }
        #expect(permissions(base + "/target") == 0o755)
        try replace("file", in: base, with: [1])
        #expect(throws: StorageError.self) { try DurableFile.preparePrivateDirectory(base + "/file") }
    }

    @Test("entries, status and removal of an empty directory")
    func entriesAndRemoval() throws {
        let base = scratchDirectory()
        try DurableFile.createEmpty("marker", in: base)
        #expect(try DurableFile.entries(in: base) == ["marker"])
        let status = try #require(try DurableFile.status(base))
        #expect(status.isDirectory && status.isOwnedByCurrentUser && status.permissions == 0o700)
        #expect(try DurableFile.status(base + "/none") == nil)
        #expect(try !DurableFile.removeDirectory(base), "not empty")
        #expect(try DurableFile.remove(base + "/marker"))
        #expect(try DurableFile.removeDirectory(base))
        #expect(!DurableFile.exists(base))
    }
}
