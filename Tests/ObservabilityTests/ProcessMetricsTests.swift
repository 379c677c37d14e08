import Glibc
import TestSupport
import Testing

@testable import Observability

@Suite("Process metrics")
struct ProcessMetricsTests {
    @Test("a /proc stat line is read from after the command name, whatever the name holds")
    func statParsing() throws {
        // proc(5): pid (comm) state ppid ... utime(14) stime(15) ... num_threads(20) ... starttime(22)
        // vsize(23) rss(24) ...; a command name may hold spaces and parentheses.
        var fields = (3...52).map { "\($0)" }
        fields[0] = "S"
        fields[14 - 3] = "250"  // utime, ticks
        fields[15 - 3] = "50"  // stime
        fields[20 - 3] = "7"  // threads
        fields[22 - 3] = "1000"  // start, ticks after boot
        fields[23 - 3] = "123456789"  // virtual bytes
        fields[24 - 3] = "100"  // resident pages
        let line = "4242 (a) b (c)) " + fields.joined(separator: " ") + "\n"
        let stat = try #require(ProcStat.parse(stat: line, bootTime: 1_700_000_000))
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        #expect(stat.cpuSeconds == 300 / ticks)
        #expect(stat.threads == 7)
        #expect(stat.virtualBytes == 123_456_789)
        #expect(stat.residentBytes == 100 * Double(sysconf(Int32(_SC_PAGESIZE))))
        #expect(stat.startTimeSeconds == 1_700_000_000 + 1000 / ticks)
        #expect(ProcStat.parse(stat: "4242 (cut) S 1 2", bootTime: nil) == nil)
        #expect(ProcStat.parse(stat: line, bootTime: nil)?.startTimeSeconds == nil)
    }

    @Test("boot time comes from the btime line of /proc/stat")
    func bootTime() {
        #expect(ProcStat.bootTime(procStat: "cpu  1 2 3\nintr 5\nbtime 1764520000\nprocesses 9\n") == 1_764_520_000)
        #expect(ProcStat.bootTime(procStat: "cpu  1 2 3\n") == nil)
        #expect(ProcStat.bootTime(procStat: ProcStat.readProcFile("/proc/stat") ?? "") ?? 0 > 0)
    }

    @Test("the heap probe says glibc exactly where malloc resolves to glibc's")
    func probe() {
        #expect(ProcessMetrics.mallocIsGlibc == Allocator.isGlibc)
    }

    @Test(
        "malloc_in_use_bytes follows what the program holds, and falls back when it is freed",
        .enabled(if: Allocator.isGlibc, "another allocator serves malloc (a sanitizer's, or jemalloc by LD_PRELOAD)"))
    func heapInUse() throws {
        let registry = MetricsRegistry()
        ProcessMetrics.install(on: registry)
        func inUse() throws -> Double {
            let lines = registry.render().split(separator: "\n")
            let line = try #require(lines.first { $0.hasPrefix("malloc_in_use_bytes ") })
            return try #require(Double(line.split(separator: " ")[1]))
        }
        // 512 MiB, far above what other suites running alongside allocate, and never touched, so
        // the machine lends address space, not memory.
        let size = 512 << 20
        let before = try inUse()
        let block = try #require(malloc(size))
        let holding = try inUse()
        free(block)
        let after = try inUse()
        #expect(holding - before > Double(size) * 0.75, "before \(before), holding \(holding)")
        #expect(holding - after > Double(size) * 0.75, "holding \(holding), after \(after)")
    }

    @Test("a registry renders its collectors' values at each render, and a sampled counter as a counter")
    func collectors() {
        let registry = MetricsRegistry()
        let total = registry.sampledCounter("outside_total", help: "A total kept elsewhere.")
        let source = Counter()
        registry.addCollector { total.set(Double(source.current)) }
        source.increment(by: 3)
        #expect(registry.render().contains("# TYPE outside_total counter\noutside_total 3.0\n"))
        source.increment(by: 2)
        #expect(registry.render().contains("outside_total 5.0\n"))
    }
}
