import Foundation

/// A small tmpfs mounted on a fresh temporary directory: a real file system that fills up
/// (`ENOSPC`), unmounted and removed when the value is deinitialised.
package final class Tmpfs: Sendable {
    /// The mount point.
    package let path: String
    private let directory: TemporaryDirectory

    /// Mounts a tmpfs of `size` (`96k`, `2m`); nil when this process may not mount (it needs root,
    /// CAP_SYS_ADMIN), with the errno in `failure`: the caller cancels its test as skipped.
    package init?(size: String, failure: inout Int32) {
        guard let directory = try? TemporaryDirectory(prefix: "detour-tmpfs") else { return nil }
        guard mount("tmpfs", directory.path, "tmpfs", 0, "size=" + size) == 0 else {
            failure = errno
            return nil
        }
        self.directory = directory
        path = directory.path
    }

    deinit { umount(path) }
}
