import Glibc

/// Which allocator serves `malloc` in this process, found independently of the code under test:
/// whether the `malloc` every call resolves to is libc.so.6's own (a sanitizer's runtime, or
/// jemalloc by LD_PRELOAD, puts another one first).
package enum Allocator {
    package static var isGlibc: Bool {
        guard let libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD) else { return false }
        defer { dlclose(libc) }
        guard let own = dlsym(libc, "malloc") else { return false }
        return dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc") == own
    }
}
