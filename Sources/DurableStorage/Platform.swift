// The one file of the module that names the C library: every call whose name a method of
// this module shadows (`read`, `write`, `fsync`, `rename`), and every use of `struct stat`
// or `struct dirent`, whose field types differ between glibc and Darwin, lives here.
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

/// The system calls, by their platform names.
enum Platform {
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
        #if canImport(Glibc)
            Glibc.read(fd, buffer.baseAddress, buffer.count)
        #else
            Darwin.read(fd, buffer.baseAddress, buffer.count)
        #endif
    }

    static func pread(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, _ offset: Int) -> Int {
        #if canImport(Glibc)
            Glibc.pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
        #else
            Darwin.pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
        #endif
    }

    static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Int {
        #if canImport(Glibc)
            Glibc.write(fd, buffer.baseAddress, buffer.count)
        #else
            Darwin.write(fd, buffer.baseAddress, buffer.count)
        #endif
    }

    static func pwrite(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, _ offset: Int) -> Int {
        #if canImport(Glibc)
            Glibc.pwrite(fd, buffer.baseAddress, buffer.count, off_t(offset))
        #else
            Darwin.pwrite(fd, buffer.baseAddress, buffer.count, off_t(offset))
        #endif
    }

    /// `fsync(2)`. On Darwin `fsync` only hands the data to the drive, which may keep it in a
    /// volatile cache; `F_FULLFSYNC` asks the drive to write it (`fsync` when the file system
    /// does not support it).
    static func fsync(_ fd: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.fsync(fd)
        #else
            Darwin.fcntl(fd, F_FULLFSYNC) == 0 ? 0 : Darwin.fsync(fd)
        #endif
    }

    static func rename(_ from: String, _ to: String) -> Int32 {
        #if canImport(Glibc)
            Glibc.rename(from, to)
        #else
            Darwin.rename(from, to)
        #endif
    }

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

    static func fchmod(_ fd: Int32, _ permissions: UInt32) -> Int32 {
        #if canImport(Glibc)
            Glibc.fchmod(fd, mode_t(permissions))
        #else
            Darwin.fchmod(fd, mode_t(permissions))
        #endif
    }

    static func mkdir(_ path: String, _ permissions: UInt32) -> Int32 {
        #if canImport(Glibc)
            Glibc.mkdir(path, mode_t(permissions))
        #else
            Darwin.mkdir(path, mode_t(permissions))
        #endif
    }

    /// `open(2)` with a mode for a file it creates.
    static func open(_ path: String, _ flags: Int32, _ permissions: UInt32) -> Int32 {
        #if canImport(Glibc)
            Glibc.open(path, flags, mode_t(permissions))
        #else
            Darwin.open(path, flags, mode_t(permissions))
        #endif
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
    static func realpath(_ path: String) -> String? {
        #if canImport(Glibc)
            let resolved = Glibc.realpath(path, nil)
        #else
            let resolved = Darwin.realpath(path, nil)
        #endif
        return resolved.map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        }
    }
}
