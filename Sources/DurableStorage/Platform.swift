// The one file of the module that deals with the C library's differences: every call whose
// name a method of this module shadows (`read`, `write`, `fsync`, `rename`), and every use of
// `struct stat` or `struct dirent`, whose field types differ between glibc and Darwin.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#else
    #error("DurableStorage needs glibc or Darwin")
#endif

/// What `stat(2)` says about a file, in types that are the same on every platform.
package struct FileStatus: Sendable {
    /// The size in bytes.
    package var size: Int
    /// The permission bits (`mode & 0o7777`).
    package var permissions: UInt32
    /// Whether it is a directory (a symbolic link is not, for `lstat`).
    package var isDirectory: Bool
    /// Whether it is a regular file.
    package var isRegularFile: Bool
    /// Whether the effective user of this process owns it.
    package var isOwnedByCurrentUser: Bool
    /// The device and inode: what identifies the file whatever its name.
    package var identity: (device: UInt64, inode: UInt64)

    init(_ st: stat) {
        size = Int(st.st_size)
        permissions = UInt32(st.st_mode) & 0o7777
        isDirectory = UInt32(st.st_mode) & UInt32(S_IFMT) == UInt32(S_IFDIR)
        isRegularFile = UInt32(st.st_mode) & UInt32(S_IFMT) == UInt32(S_IFREG)
        isOwnedByCurrentUser = st.st_uid == geteuid()
        identity = (UInt64(st.st_dev), UInt64(st.st_ino))
    }
}

/// The system calls the module makes whose names its own methods shadow, or whose types differ
/// between glibc and Darwin. (Each wrapper has a name of its own, so the call inside it reaches
/// the C library without naming the module.)
enum Platform {
    static func readBytes(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
    }

    static func writeBytes(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Int {
        write(fd, buffer.baseAddress, buffer.count)
    }

    static func writeBytes(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, at offset: Int) -> Int {
        pwrite(fd, buffer.baseAddress, buffer.count, off_t(offset))
    }

    /// `fsync(2)`. On Darwin `fsync` only hands the data to the drive, which may keep it in a
    /// volatile cache; `F_FULLFSYNC` asks the drive to write it (`fsync` when the file system
    /// does not support it).
    static func synchronize(_ fd: Int32) -> Int32 {
        #if canImport(Darwin)
            if fcntl(fd, F_FULLFSYNC) == 0 { return 0 }
        #endif
        return fsync(fd)
    }

    static func renameFile(_ from: String, _ to: String) -> Int32 { rename(from, to) }

    static func status(of fd: Int32) -> FileStatus? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return FileStatus(st)
    }

    /// `lstat(2)`: a symbolic link is described, not followed.
    static func linkStatus(_ path: String) -> FileStatus? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return FileStatus(st)
    }

    /// `stat(2)`: a symbolic link is followed.
    static func status(_ path: String) -> FileStatus? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return FileStatus(st)
    }

    static func changeMode(_ fd: Int32, _ permissions: UInt32) -> Int32 { fchmod(fd, mode_t(permissions)) }

    static func makeDirectory(_ path: String, _ permissions: UInt32) -> Int32 { mkdir(path, mode_t(permissions)) }

    /// `open(2)` with a mode for a file it creates.
    static func openFile(_ path: String, _ flags: Int32, _ permissions: UInt32) -> Int32 {
        open(path, flags, mode_t(permissions))
    }

    /// The names in a directory except `.` and `..`, or nil (and `errno`) when it cannot be opened.
    static func entries(_ path: String) -> [String]? {
        guard let dir = opendir(path) else { return nil }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The absolute path with every link resolved, or nil.
    static func resolvedPath(_ path: String) -> String? {
        realpath(path, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        }
    }
}
