import Foundation
import Postgres
import TestSupport
import Testing

/// Issue 9, "disk full": the event log runs out of room (a real ENOSPC on a small tmpfs when this
/// process may mount one, and always the `--max-disk` cap); ingest answers 503 with Retry-After,
/// no segment is corrupt, ingest resumes when room returns, and nothing acknowledged is lost.
@Suite(.serialized)
struct DiskFullTests {
    @Test("a disk-usage cap turns into 503 with Retry-After, never a corrupt segment, and ingest resumes with room")
    func diskCap() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory(prefix: "detour-chaos-cap")
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data.path]
        let app = try AppKeys.create(id: "cap-app", environment: environment)

        let small = RunningPipeline(
            environment: environment, extraArguments: ["--max-disk", "256KiB", "--segment-bytes", "64KiB"])
        try small.start()
        let load = LoadClient(clients: 2, app: app, prefix: "cap") { small.port }
        defer { load.stop() }
        #expect(
            load.waitForAnswers(503, count: 3, timeout: .seconds(180)),
            "the cap was never reached: \(load.snapshot.statuses)")
        #expect(load.snapshot.unavailableWithoutRetryAfter == 0, "every 503 carries Retry-After")
        // The log reads as not writable for --retry-after (1 s) after each failed append, and the
        // clients pause after each 503: poll, while the load goes on, rather than ask once.
        var ready: RawHTTP.Response?
        #expect(
            eventually(timeout: .seconds(30)) {
                ready = RawHTTP.exchange(port: small.port, RawHTTP.request("GET", "/readyz"))
                return ready?.status == 503
            }, "readyz reports the full log: \(ready?.text ?? "no answer")")
        #expect(verify(data.path, environment: environment), "no corrupt segment while full")
        load.stop()
        #expect(small.stop() == 0)

        // Room returns (the operator raises the cap): the same data dir accepts again.
        let roomy = RunningPipeline(environment: environment, extraArguments: ["--max-disk", "64MiB"])
        try roomy.start()
        defer { roomy.stop() }
        let more = LoadClient(clients: 2, app: app, prefix: "cap2") { roomy.port }
        defer { more.stop() }
        #expect(more.waitForAcknowledgements(100), "ingest resumes with room: \(more.snapshot.statuses)")
        more.stop()
        #expect(roomy.stop() == 0)
        #expect(verify(data.path, environment: environment))

        try Loaded.drain(environment: environment)
        let connection = try database.connect()
        defer { connection.close() }
        var tally = load.snapshot
        let second = more.snapshot
        tally.sent.formUnion(second.sent)
        tally.acknowledged.formUnion(second.acknowledged)
        let report = try ExactlyOnceReport.check(connection: connection, app: app.id, tally: tally)
        #expect(report.isExactlyOnce, "\(report)")
        Scale.record("diskcap_503", load.count(of: 503))
        Scale.record("diskcap_lost", report.lost.count)
    }

    @Test("a real ENOSPC on a small tmpfs answers 503, corrupts nothing, and ingest resumes when space is freed")
    func realENOSPC() throws {
        let mountPoint = try TemporaryDirectory(prefix: chaosName("detour-chaos-tmpfs"))
        guard (try? LocalCluster.shell(#"mount -t tmpfs -o size=6m tmpfs "$1""#, mountPoint.path)) != nil else {
            // Not root or no CAP_SYS_ADMIN: the cap test above covers the behaviour. Reported as
            // skipped, not passed (until 2026-12-05 it returned and counted as a pass).
            Scale.record("tmpfs_skipped", 1)
            try Test.cancel("skipped: cannot mount a tmpfs here; needs root")
        }
        defer { _ = try? LocalCluster.shell(#"umount -l "$1""#, mountPoint.path) }
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = mountPoint.path + "/data"
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data]
        let app = try AppKeys.create(id: "tmpfs-app", environment: environment)

        let pipeline = RunningPipeline(environment: environment, extraArguments: ["--segment-bytes", "256KiB"])
        try pipeline.start()
        defer { pipeline.stop() }
        let load = LoadClient(clients: 2, app: app, prefix: "fs") { pipeline.port }
        defer { load.stop() }
        #expect(load.waitForAcknowledgements(50))
        // Fill the filesystem up to its last few KiB with a file we can delete later.
        let filler = mountPoint.path + "/filler"
        _ = try? LocalCluster.shell(#"dd if=/dev/zero of="$1" bs=4k 2>/dev/null; sync; true"#, filler)
        #expect(
            load.waitForAnswers(503, count: 3, timeout: .seconds(180)),
            "ENOSPC never surfaced: \(load.snapshot.statuses)")
        #expect(load.snapshot.unavailableWithoutRetryAfter == 0, "every 503 carries Retry-After")
        #expect(verify(data, environment: environment), "no corrupt segment on a full disk")

        try FileManager.default.removeItem(atPath: filler)
        #expect(
            load.waitForAcknowledgements(100, timeout: .seconds(120)),
            "ingest resumes once space is freed: \(load.snapshot.statuses)")
        load.stop()
        #expect(pipeline.stop() == 0, "log: \(pipeline.log.suffix(2000))")
        #expect(verify(data, environment: environment))

        try Loaded.drain(environment: environment)
        let connection = try database.connect()
        defer { connection.close() }
        let report = try ExactlyOnceReport.check(connection: connection, app: app.id, tally: load.snapshot)
        #expect(report.isExactlyOnce, "\(report)")
        Scale.record("tmpfs_503", load.count(of: 503))
        Scale.record("tmpfs_lost", report.lost.count)
    }

    /// `segments verify DATA/segments` exits 0.
    private func verify(_ data: String, environment: [String: String]) -> Bool {
        guard let result = try? Binary.run(["segments", "verify", data + "/segments"], environment: environment)
        else { return false }
        if result.status != 0 { print("segments verify: \(result.output) \(result.errors)") }
        return result.status == 0
    }
}
