internal import CMalloc
import Glibc
import Synchronization

/// The process metrics Prometheus client libraries export by default (`process_cpu_seconds_total`,
/// `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_start_time_seconds`,
/// `process_open_fds`, `process_max_fds`), plus `process_threads` and the C heap as glibc's
/// `mallinfo2()` counts it: `malloc_in_use_bytes` (allocated and not yet freed) and
/// `malloc_held_bytes` (taken from the system, in use or kept free for reuse; both absent where
/// another allocator replaces glibc's, as under a sanitizer). Resident memory
/// alone cannot tell a leak from memory the allocator keeps after a peak; the in-use figure can:
/// it returns to the same level whenever the same work is idle again.
///
/// Read from `/proc/self` at each render (a scrape), not kept current in between. `mallinfo2`
/// takes each malloc arena's lock while it counts that arena's free chunks, so a scrape can delay
/// an allocation by that long (measured in docs/ingest.md, "Metrics").
package enum ProcessMetrics {
    /// Adds the process metrics to `registry`, sampled whenever it renders.
    package static func install(on registry: MetricsRegistry) {
        let cpu = registry.sampledCounter(
            "process_cpu_seconds_total", help: "User and system CPU time spent, in seconds.")
        let resident = registry.gauge("process_resident_memory_bytes", help: "Resident memory size in bytes.")
        let virtual = registry.gauge("process_virtual_memory_bytes", help: "Virtual memory size in bytes.")
        let started = registry.gauge(
            "process_start_time_seconds", help: "Start time of the process since the Unix epoch, in seconds.")
        let openFDs = registry.gauge("process_open_fds", help: "Number of open file descriptors.")
        let maxFDs = registry.gauge("process_max_fds", help: "Maximum number of open file descriptors.")
        let threads = registry.gauge("process_threads", help: "Number of threads of the process.")
        // Only where glibc's allocator serves malloc: under a sanitizer's allocator (or jemalloc by
        // LD_PRELOAD) mallinfo2 counts glibc's unused arenas, and a heap of 0 bytes would mislead.
        let heap = mallocIsGlibc ? HeapGauges(registry) : nil
        registry.addCollector {
            if let stat = ProcStat.read() {
                cpu.set(stat.cpuSeconds)
                resident.set(stat.residentBytes)
                virtual.set(stat.virtualBytes)
                threads.set(stat.threads)
                if let startTime = stat.startTimeSeconds { started.set(startTime) }
            }
            openFDs.set(Double(countOpenFileDescriptors()))
            var limit = rlimit()
            if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { maxFDs.set(Double(limit.rlim_cur)) }
            heap?.sample()
        }
    }

    /// Whether glibc's allocator serves `malloc` in this process: a 64 MiB block shows in
    /// `mallinfo2` while it is held. 64 MiB is above glibc's largest mmap threshold (32 MiB; the
    /// threshold rises as mapped blocks are freed), so glibc maps it whatever ran before, and it is
    /// never touched, so it costs address space, not memory. Probed once, when first asked (for
    /// `MetricsRegistry.shared`, as the process sets up its metrics).
    package static let mallocIsGlibc: Bool = {
        let size = 64 << 20
        let before = heapInUseBytes(mallinfo2())
        guard let block = malloc(size) else { return false }
        defer { free(block) }
        // The block escapes, so the optimiser cannot drop the malloc/free pair as unused (it did in
        // release builds: the probe then said false and the heap metrics were never shown).
        probeSink.store(UInt(bitPattern: block), ordering: .relaxed)
        return heapInUseBytes(mallinfo2()) - before >= size * 3 / 4  // other threads may free meanwhile
    }()

    /// Where the probe's block escapes to.
    private static let probeSink = Atomic<UInt>(0)

    /// `malloc_in_use_bytes`: chunks in use in the arenas plus blocks mapped on their own.
    private static func heapInUseBytes(_ heap: mallinfo2) -> Int { heap.uordblks + heap.hblkhd }

    /// `malloc_in_use_bytes` and `malloc_held_bytes`.
    private struct HeapGauges {
        let inUse: Gauge
        let held: Gauge

        init(_ registry: MetricsRegistry) {
            inUse = registry.gauge(
                "malloc_in_use_bytes", help: "Bytes allocated with malloc and not yet freed (glibc mallinfo2).")
            held = registry.gauge(
                "malloc_held_bytes",
                help: "Bytes malloc took from the system, in use or kept for reuse (glibc mallinfo2).")
        }

        func sample() {
            let heap = mallinfo2()
            inUse.set(Double(ProcessMetrics.heapInUseBytes(heap)))
            held.set(Double(heap.arena + heap.hblkhd))
        }
    }

    /// Entries of `/proc/self/fd`, less the one the listing itself opens.
    static func countOpenFileDescriptors() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            // In place (`&`): a copy of `d_name` would read all 256 bytes, past the end of a short
            // last record in readdir's buffer (AddressSanitizer: heap-buffer-overflow).
            let isDot = withUnsafePointer(to: &entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: UInt8.self, capacity: 3) { name in
                    name[0] == UInt8(ascii: ".") && (name[1] == 0 || (name[1] == UInt8(ascii: ".") && name[2] == 0))
                }
            }
            if !isDot { count += 1 }
        }
        return max(0, count - 1)
    }
}

/// The fields of `/proc/self/stat` the process metrics use (proc(5)).
struct ProcStat {
    var cpuSeconds: Double
    var residentBytes: Double
    var virtualBytes: Double
    var threads: Double
    /// nil when `/proc/stat` has no `btime` line.
    var startTimeSeconds: Double?

    static func read() -> ProcStat? {
        guard let text = readProcFile("/proc/self/stat") else { return nil }
        return parse(stat: text, bootTime: bootSeconds)
    }

    /// The machine's boot time, read once (it does not change).
    static let bootSeconds = readProcFile("/proc/stat").flatMap(bootTime(procStat:))

    /// Parses a `/proc/PID/stat` line. The command name (field 2) is in parentheses and may hold
    /// spaces and parentheses itself, so the fields are counted from after its last `)`.
    static func parse(stat text: String, bootTime: Double?) -> ProcStat? {
        guard let close = text.lastIndex(of: ")") else { return nil }
        // Field 3 (state) is index 0 here, so field N is index N - 3.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count >= 22, let utime = Double(fields[11]), let stime = Double(fields[12]),
            let threads = Double(fields[17]), let startTicks = Double(fields[19]),
            let virtual = Double(fields[20]), let residentPages = Double(fields[21])
        else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let page = Double(sysconf(Int32(_SC_PAGESIZE)))
        return ProcStat(
            cpuSeconds: (utime + stime) / ticks, residentBytes: residentPages * page, virtualBytes: virtual,
            threads: threads, startTimeSeconds: bootTime.map { $0 + startTicks / ticks })
    }

    /// The `btime` line of `/proc/stat`: the boot time in seconds since the Unix epoch.
    static func bootTime(procStat text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingPrefix(while: { $0 == " " }))
        }
        return nil
    }

    /// The whole of a `/proc` file (their size reads as 0, so read until the end).
    static func readProcFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            bytes += chunk[..<count]
            if bytes.count > 1 << 20 { break }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
