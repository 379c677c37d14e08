import Foundation
import Postgres
import Reports
import TestSupport
import Testing

@Suite struct DailyReportTests {
    @Test("refuses a day that is not completely loaded, with exit status 75 and nothing written")
    func refusesIncompleteDay() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))  // watermark 2026-06-05T12:00Z
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let job = DailyReport(connection: database.connection)
        let refused = try job.run(
            date: day("2026-06-05"), app: "a", outDirectory: out, formats: [.csv, .json, .html], allowPartial: false)
        #expect(refused.exitCode == 75)
        #expect(refused.outputs.isEmpty)
        #expect(
            refused.refusals == [
                .dayNotComplete(
                    app: "a", day: day("2026-06-05"), watermark: "2026-06-05T12:00:00.000000Z",
                    requiredWatermark: "2026-06-06T00:10:00.000000Z", nodesBehind: ["node-1"])
            ])
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).isEmpty)

        // The day before is complete: the watermark passed its end plus the grace period.
        let run = try job.run(
            date: day("2026-06-04"), app: "a", outDirectory: out, formats: [.json], allowPartial: false)
        #expect(run.outputs.first?.isComplete == true)
        #expect(run.exitCode == 0)
    }

    @Test("every app is decided on its own: a complete UTC app is written while an incomplete LA app is refused")
    func eachAppOnItsOwn() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try fixture.app("la", timeZone: "America/Los_Angeles")  // 06-01 ends at 06-02T07:00Z (PDT)
        try fixture.app("utc")  // 06-01 ends at 06-02T00:00Z
        fixture.click("c1", app: "utc", path: "/x", at: "2026-06-01T10:00:00Z")
        fixture.click("c2", app: "la", path: "/y", at: "2026-06-01T18:00:00Z")
        try fixture.load()
        // 01:20Z, as the crontab's second try: the UTC day is complete, the Los Angeles one is not
        // (it needs 07:10Z). "la" sorts first: before, its refusal stopped the run before "utc".
        try fixture.watermark("2026-06-02T01:20:00Z")
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let job = DailyReport(connection: database.connection)
        let run = try job.run(
            date: day("2026-06-01"), app: nil, outDirectory: out, formats: [.csv, .json], allowPartial: false)
        #expect(run.outputs.map(\.app) == ["utc"])
        #expect(
            run.refusals == [
                .dayNotComplete(
                    app: "la", day: day("2026-06-01"), watermark: "2026-06-02T01:20:00.000000Z",
                    requiredWatermark: "2026-06-02T07:10:00.000000Z", nodesBehind: ["node-1"])
            ])
        #expect(run.exitCode == 75)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out + "/2026-06-01") == ["utc"])
        let json = try String(contentsOfFile: out + "/2026-06-01/utc/report.json", encoding: .utf8)
        #expect(json.contains(#""complete":true"#) && json.contains(#""clicks":1"#))

        // Once Los Angeles' day is complete too, the rerun writes both and succeeds.
        try fixture.watermark("2026-06-02T07:10:00Z")
        let later = try job.run(
            date: day("2026-06-01"), app: nil, outDirectory: out, formats: [.csv, .json], allowPartial: false)
        #expect(later.outputs.map(\.app) == ["la", "utc"])
        #expect(later.refusals.isEmpty && later.exitCode == 0)

        // With --app, only that app is considered: refused, nothing written, 75.
        let tomorrow = try job.run(
            date: day("2026-06-02"), app: "utc", outDirectory: out, formats: [.json], allowPartial: false)
        #expect(tomorrow.outputs.isEmpty && tomorrow.refusals.count == 1 && tomorrow.exitCode == 75)
        #expect(!FileManager.default.fileExists(atPath: out + "/2026-06-02"))
    }

    @Test("refuses while rollup work is queued, and runs once process_rollups has applied it")
    func refusesPendingRollups() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection, queued: true)
        try fixture.app("a")
        fixture.click("c1", path: "/x", at: "2026-06-01T10:00:00Z")
        try fixture.load()
        try fixture.watermark("2026-06-03T00:00:00Z")
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let job = DailyReport(connection: database.connection)
        let refused = try job.run(
            date: day("2026-06-01"), app: "a", outDirectory: out, formats: [.json], allowPartial: false)
        #expect(refused.refusals == [.rollupsPending(app: "a", days: 1)] && refused.outputs.isEmpty)
        #expect(try ReportService(connection: database.connection).processPending() == 1)
        let outputs = try job.run(
            date: day("2026-06-01"), app: "a", outDirectory: out, formats: [.json], allowPartial: false
        ).outputs
        #expect(outputs.first?.isComplete == true)
        let json = try String(contentsOfFile: out + "/2026-06-01/a/report.json", encoding: .utf8)
        #expect(json.contains(#""clicks":1"#))
    }

    @Test("an app whose time zone the server no longer knows is refused (exit 78) and the apps after it are written")
    func unknownTimeZoneRefusesOnlyItsApp() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try fixture.app("a")
        try fixture.app("b")
        fixture.click("c1", app: "a", path: "/x", at: "2026-06-01T10:00:00Z")
        fixture.click("c2", app: "b", path: "/y", at: "2026-06-01T10:00:00Z")
        try fixture.load()
        try fixture.watermark("2026-06-02T01:20:00Z")
        // A name the server knew when "a" was set up and no longer does (the check refuses it now).
        try database.connection.execute("ALTER TABLE apps DROP CONSTRAINT apps_time_zone_known")
        try database.connection.execute("UPDATE apps SET time_zone = 'Gone/Zone' WHERE id = 'a'")
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let job = DailyReport(connection: database.connection)
        for allowPartial in [false, true] {
            let run = try job.run(
                date: day("2026-06-01"), app: nil, outDirectory: out, formats: [.json], allowPartial: allowPartial)
            #expect(run.outputs.map(\.app) == ["b"])
            #expect(run.refusals == [.unknownTimeZone(app: "a", timeZone: "Gone/Zone")])
            #expect(run.exitCode == 78)
        }
        #expect(ReportError.unknownTimeZone(app: "a", timeZone: "Gone/Zone").description.contains("\"Gone/Zone\""))
        #expect(!FileManager.default.fileExists(atPath: out + "/2026-06-01/a"))
        // A day not complete yet for "b" as well: 75 wins, so cron's retry writes "b" once it is
        // (until 2026-12-05 the run said 78, "retrying does not help").
        let mixed = try job.run(
            date: day("2026-06-02"), app: nil, outDirectory: out, formats: [.json], allowPartial: false)
        #expect(mixed.outputs.isEmpty)
        #expect(mixed.refusals.map(\.exitCode) == [78, 75])
        #expect(mixed.exitCode == 75)
    }

    @Test(
        "an app whose files cannot be written is named beside the other refusals, the apps after it are written, and 75 still wins"
    )
    func writeFailureRefusesOnlyItsApp() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try fixture.app("a")
        try fixture.app("b")
        // Its day ends at 2026-06-02T11:00Z: not complete at the watermark below.
        try fixture.app("c", timeZone: "Pacific/Pago_Pago")
        for app in ["a", "b", "c"] { fixture.click("c-\(app)", app: app, path: "/x", at: "2026-06-01T10:00:00Z") }
        try fixture.load()
        try fixture.watermark("2026-06-02T01:20:00Z")
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        // "a"'s directory is a file.
        try FileManager.default.createDirectory(atPath: out + "/2026-06-01", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: out + "/2026-06-01/a", contents: Data()))
        let run = try DailyReport(connection: database.connection).run(
            date: day("2026-06-01"), app: nil, outDirectory: out, formats: [.json], allowPartial: false)
        #expect(run.outputs.map(\.app) == ["b"])
        #expect(run.refusals.map(\.exitCode) == [74, 75])
        #expect(run.refusals.first?.description.contains("2026-06-01/a") == true)
        #expect(run.failure == nil && run.untried.isEmpty)
        #expect(run.exitCode == 75)
        #expect(FileManager.default.fileExists(atPath: out + "/2026-06-01/b/report.json"))
        // A PostgreSQL failure stops the run but not what came before it: 69, unless a day was refused.
        var failed = DailyReportRun(outputs: [], refusals: [.unknownTimeZone(app: "a", timeZone: "Gone/Zone")])
        failed.failure = .database(message: "server closed the connection")
        #expect(failed.exitCode == 69)
        failed.refusals.append(.rollupsPending(app: "b", days: 1))
        #expect(failed.exitCode == 75)
    }

    @Test("the files state loaded_through, which moves retention days out of null while the watermark stays")
    func loadedThroughIsStated() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try fixture.app("a")
        fixture.event("app_open", device: "d1", at: "2026-06-01T10:00:00Z", kind: "retention")
        fixture.event("app_open", device: "d1", at: "2026-06-02T09:00:00Z", kind: "retention")
        try fixture.load()
        try fixture.watermark("2026-06-02T09:00:00Z")
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let job = DailyReport(connection: database.connection)
        func written() throws -> (json: String, html: String) {
            let run = try job.run(
                date: day("2026-06-01"), app: "a", outDirectory: out, formats: [.json, .html], allowPartial: false)
            #expect(run.refusals.isEmpty, "\(run.refusals)")
            return (
                try String(contentsOfFile: out + "/2026-06-01/a/report.json", encoding: .utf8),
                try String(contentsOfFile: out + "/2026-06-01/a/report.html", encoding: .utf8)
            )
        }
        let before = try written()
        let watermark = #""watermark":"2026-06-02T09:00:00.000000Z""#
        #expect(before.json.contains(watermark + #","loaded_through":"2026-06-02T09:00:00.000000Z""#))
        #expect(before.json.contains(#""d1":null"#))
        // A quiet night: the aggregator reads every log to its end after 06-02, nothing new arrives.
        // Day 1 of the 06-01 cohort is over; the watermark (the newest event loaded) is unchanged,
        // so until 2026-12-05 two runs stating the same watermark showed different numbers.
        try fixture.caughtUp("2026-06-03T00:30:00Z")
        let after = try written()
        #expect(after.json.contains(watermark + #","loaded_through":"2026-06-03T00:30:00.000000Z""#))
        #expect(after.json.contains(#""d1":1"#))
        #expect(after.html.contains("loaded through 2026-06-03T00:30:00.000000Z"))
    }

    @Test("rollup work queued only for later days does not hold a finished day back")
    func laterPendingDaysDoNotHoldTheDay() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection, queued: true)
        try fixture.app("a", timeZone: "America/Los_Angeles")
        fixture.click("c1", path: "/x", at: "2026-06-01T20:00:00Z")
        try fixture.load()
        #expect(try ReportService(connection: database.connection).processPending() == 1)
        // A load of today's traffic (06-03 in Los Angeles) queues its day, as under steady traffic a
        // load does every few seconds; 06-02T06:59Z is still 06-01 there, so that one holds 06-01.
        fixture.click("c2", path: "/x", at: "2026-06-03T18:00:00Z")
        try fixture.load()
        try fixture.watermark("2026-06-03T18:00:00Z")
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let job = DailyReport(connection: database.connection)
        let written = try job.run(
            date: day("2026-06-01"), app: "a", outDirectory: out, formats: [.json], allowPartial: false)
        #expect(written.refusals.isEmpty && written.outputs.first?.isComplete == true)
        let json = try String(contentsOfFile: out + "/2026-06-01/a/report.json", encoding: .utf8)
        #expect(json.contains(#""clicks":1"#))

        fixture.click("c3", path: "/x", at: "2026-06-02T06:59:00Z")
        try fixture.load()
        let refused = try job.run(
            date: day("2026-06-01"), app: "a", outDirectory: out, formats: [.json], allowPartial: false)
        #expect(refused.refusals == [.rollupsPending(app: "a", days: 1)])
    }

    @Test("the grace period is measured from the end of the day in the app's time zone")
    func graceInTimeZone() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try fixture.app("a", timeZone: "Asia/Tokyo")  // UTC+9: 06-01 ends at 06-01T15:00Z
        try fixture.watermark("2026-06-01T15:09:00Z")
        let job = DailyReport(connection: database.connection)
        #expect(try job.completeness(app: "a", date: day("2026-06-01")).isComplete == false)
        try fixture.watermark("2026-06-01T15:10:00Z")
        #expect(try job.completeness(app: "a", date: day("2026-06-01")).isComplete == true)
        #expect(
            try DailyReport(connection: database.connection, graceSeconds: 3600).completeness(
                app: "a", date: day("2026-06-01")
            ).isComplete == false)
    }

    @Test("a quiet day is complete once every node's log was read to its end after the day's end plus grace")
    func quietDayCompletes() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try fixture.app("a")
        fixture.click("c1", path: "/x", at: "2026-06-01T20:00:00Z")
        try fixture.load()
        // The last event of the day was received at 20:00; nothing arrives after it (a quiet night).
        try fixture.watermark("2026-06-01T20:00:00Z")
        let job = DailyReport(connection: database.connection)
        #expect(try job.completeness(app: "a", date: day("2026-06-01")).isComplete == false)
        // The aggregator's idle cycles found the log at its end: at 00:09:59 not yet enough, at 00:10 it is.
        try fixture.caughtUp("2026-06-02T00:09:59Z")
        #expect(try job.completeness(app: "a", date: day("2026-06-01")).isComplete == false)
        try fixture.caughtUp("2026-06-02T00:10:00Z")
        let status = try job.completeness(app: "a", date: day("2026-06-01"))
        #expect(status.isComplete == true)
        #expect(status.watermark == "2026-06-01T20:00:00.000000Z")  // still the newest loaded received_at
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outputs = try job.run(
            date: day("2026-06-01"), app: "a", outDirectory: out, formats: [.json], allowPartial: false
        ).outputs
        #expect(outputs.first?.isComplete == true)
        // Every node counts: a second node last read to its end before the day ended holds the day back.
        try fixture.caughtUp("2026-06-01T23:00:00Z", node: "node-2", newestReceivedAt: "2026-06-01T19:00:00Z")
        #expect(try job.completeness(app: "a", date: day("2026-06-01")).isComplete == false)
        try fixture.caughtUp("2026-06-02T00:10:00Z", node: "node-2", newestReceivedAt: "2026-06-01T19:00:00Z")
        #expect(try job.completeness(app: "a", date: day("2026-06-01")).isComplete == true)
    }

    @Test(
        "with several nodes a day is complete only once each node is loaded past its end plus grace, not the newest alone"
    )
    func laggingNodeHoldsTheDay() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try fixture.app("a")
        fixture.click("c1", path: "/x", at: "2026-06-01T20:00:00Z")
        try fixture.load()
        // node-1 is loaded past 00:10 of the next day; node-2 has a backlog: loaded to 18:00, never
        // read to its end since (its unread segments may hold events of the day).
        try fixture.caughtUp("2026-06-02T00:14:00Z", node: "node-1", newestReceivedAt: "2026-06-02T00:15:00Z")
        try fixture.caughtUp("2026-06-01T18:00:00Z", node: "node-2", newestReceivedAt: "2026-06-01T18:00:00Z")
        let job = DailyReport(connection: database.connection)
        let lagging = try job.completeness(app: "a", date: day("2026-06-01"))
        // Until 2026-12-04 the newest received_at of any node (00:15) made the day complete.
        #expect(lagging.isComplete == false)
        #expect(lagging.nodesBehind == ["node-2"])
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let refused = try job.run(
            date: day("2026-06-01"), app: "a", outDirectory: out, formats: [.json], allowPartial: false)
        #expect(refused.exitCode == 75)
        #expect(refused.refusals.map(\.description).first?.contains("(not yet: node-2)") == true, "\(refused.refusals)")
        #expect(lagging.watermark == "2026-06-02T00:15:00.000000Z")
        // node-2's backlog is loaded and its log read to its end after the day's end plus grace.
        try fixture.caughtUp("2026-06-02T00:20:00Z", node: "node-2")
        #expect(try job.completeness(app: "a", date: day("2026-06-01")).isComplete == true)
    }

    @Test("an output directory under a file is refused with errno's words, not a Foundation error dump")
    func outUnderAFile() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        try "not a directory".write(toFile: out + "/file", atomically: true, encoding: .utf8)
        let run = try DailyReport(connection: database.connection).run(
            date: day("2026-06-01"), app: nil, outDirectory: out + "/file/reports", formats: [.json],
            allowPartial: true)
        #expect(run.outputs.isEmpty)
        #expect(run.refusals == [.io(path: out + "/file", message: "it is a file, not a directory")])
        #expect(run.exitCode == 74)
    }

    @Test("a full disk is refused naming the file with errno's words, and leaves no temporary file behind")
    func fullDisk() throws {
        var failure: Int32 = 0
        guard let tmpfs = Tmpfs(size: "12k", failure: &failure) else {
            try Test.cancel("skipped: cannot mount a tmpfs here (errno \(failure)); needs root")
        }
        try withExtendedLifetime(tmpfs) {
            let database = try Database()
            defer { database.close() }
            try loadSmallWorld(Fixture(database.connection))
            let run = try DailyReport(connection: database.connection).run(
                date: day("2026-06-01"), app: nil, outDirectory: tmpfs.path, formats: [.csv, .json, .html],
                allowPartial: true)
            #expect(run.outputs.isEmpty, "eight files written on a 12 KiB file system")
            #expect(run.exitCode == 74)
            // It named the temporary file with Foundation's error: `cannot write .../installs.csv.tmp-4242:
            // Error Domain=NSCocoaErrorDomain Code=640 "There isn’t enough space." UserInfo={...}`.
            guard case .io(let path, let message) = run.refusals.first else {
                Issue.record("\(run.refusals)")
                return
            }
            #expect(message == "No space left on device")
            #expect(path.hasPrefix(tmpfs.path + "/2026-06-01/a/") && !path.contains(".tmp"), "\(path)")
            let left = FileManager.default.enumerator(atPath: tmpfs.path)?.compactMap { $0 as? String } ?? []
            #expect(!left.contains { $0.contains(".tmp") }, "\(left)")
        }
    }

    @Test("a run leaves the temporary file of another run writing the same directory alone")
    func concurrentRunsKeepTheirOwnTemporaryFiles() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        // Another job half way through links.csv, with this process's id: the compose file's one-off
        // containers all run the binary as PID 1. The temporary file was named by the process id
        // alone, so this run truncated the other's file, wrote its own bytes into it and renamed it
        // away: the other run then renamed a file mixing both, or failed.
        let directory = out + "/2026-06-01/a"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let other = directory + "/links.csv.tmp-\(getpid())"
        try "the other run's first half".write(toFile: other, atomically: false, encoding: .utf8)
        _ = try DailyReport(connection: database.connection).run(
            date: day("2026-06-01"), app: "a", outDirectory: out, formats: [.csv], allowPartial: true)
        #expect(try String(contentsOfFile: other, encoding: .utf8) == "the other run's first half")
        let links = try String(contentsOfFile: directory + "/links.csv", encoding: .utf8)
        #expect(links.hasPrefix("report_date,complete,watermark,path,"), "\(links)")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(names.filter { $0.contains(".tmp") } == ["links.csv.tmp-\(getpid())"], "\(names)")
    }

    @Test("allowPartial writes every format, says so, and a rerun gives identical files")
    func partialAndIdempotent() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let job = DailyReport(connection: database.connection)
        let first = try job.run(
            date: day("2026-06-01"), app: nil, outDirectory: out, formats: [.csv, .json, .html], allowPartial: true
        ).outputs
        #expect(first.map(\.app) == ["a"])
        #expect(first[0].isComplete == true)
        let names = try FileManager.default.contentsOfDirectory(atPath: out + "/2026-06-01/a").sorted()
        #expect(
            names == [
                "attribution.csv", "funnel.csv", "installs.csv", "links.csv", "report.html", "report.json",
                "retention.csv", "utm.csv",
            ])
        let before = try contents(of: first[0].files)
        let again = try job.run(
            date: day("2026-06-01"), app: "a", outDirectory: out, formats: [.csv, .json, .html], allowPartial: false
        ).outputs
        #expect(try contents(of: again[0].files) == before)

        let json = try String(contentsOfFile: out + "/2026-06-01/a/report.json", encoding: .utf8)
        #expect(
            json.hasPrefix(#"{"date":"2026-06-01","app":"a","complete":true,"watermark":"2026-06-05T12:00:00.000000Z""#)
        )
        #expect(json.contains(#""revenue":{"EUR":"10","USD":"29.99"}"#))
        let links = try String(contentsOfFile: out + "/2026-06-01/a/links.csv", encoding: .utf8)
        #expect(links.hasPrefix("report_date,complete,watermark,path,day,clicks,"))
        #expect(links.contains("2026-06-01,true,2026-06-05T12:00:00.000000Z,/x,2026-06-01,2,0,2,2,1.000000,"))

        let partial = try job.run(
            date: day("2026-06-09"), app: "a", outDirectory: out, formats: [.csv, .json, .html], allowPartial: true
        ).outputs
        #expect(partial[0].isComplete == false)
        let partialJSON = try String(contentsOfFile: out + "/2026-06-09/a/report.json", encoding: .utf8)
        #expect(partialJSON.contains(#""complete":false"#))
        let partialHTML = try String(contentsOfFile: out + "/2026-06-09/a/report.html", encoding: .utf8)
        #expect(partialHTML.contains("Partial report"))
        let partialCSV = try String(contentsOfFile: out + "/2026-06-09/a/links.csv", encoding: .utf8)
        #expect(partialCSV.contains("2026-06-09,false,"))
        // No temporary files are left behind.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: out + "/2026-06-09/a").allSatisfy {
                !$0.contains(".tmp-")
            })
    }

    /// The schema's app id pattern admits `..`; its directory `<out>/<date>/..` is `<out>`, and until
    /// 2026-12-02 its eight files landed there (`apps create --id ..` took it).
    @Test("an app id '.' or '..' is refused with exit status 74 and writes nothing; the other apps are written")
    func dotAppIDsNameNoDirectory() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try loadSmallWorld(fixture)
        try fixture.app("..")
        try fixture.app(".")
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let run = try DailyReport(connection: database.connection).run(
            date: day("2026-06-01"), app: nil, outDirectory: out, formats: [.csv, .json, .html], allowPartial: true)
        #expect(run.outputs.map(\.app) == ["a"])
        #expect(
            run.refusals == [
                .io(path: out + "/2026-06-01/.", message: "app id . names no directory"),
                .io(path: out + "/2026-06-01/..", message: "app id .. names no directory"),
            ])
        #expect(run.exitCode == 74)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out) == ["2026-06-01"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: out + "/2026-06-01") == ["a"])
    }

    /// A prepended mark (U+0600, U+110BD) forms one grapheme cluster with the `<` after it, which
    /// compared as a Character is not "<"; browsers read the `<` and open a tag. Until 2026-12-02
    /// such an event name (sent with the publishable key every app ships) ran script in report.html.
    @Test("names, paths and UTM values cannot open a tag in report.html, whatever mark precedes the '<'")
    func htmlEscapesEveryAngleBracket() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try loadSmallWorld(fixture)
        let name = "\u{0600}<img src=x onerror=document.body.setAttribute(`data-pwned`,1) \u{0600}>"
        let path = "/\u{110BD}<svg onload=alert(1) \u{110BD}>"
        let source = "\u{0600}<b>news\u{0600}</b>\u{0600}\"\u{0600}'\u{0600}&amp;"
        fixture.click("c9", path: path, at: "2026-06-01T14:00:00Z", source: source)
        fixture.match("c9", at: "2026-06-01T14:05:00Z")
        fixture.event("app_open", device: "d9", at: "2026-06-01T14:06:00Z", kind: "retention")
        fixture.event(name, device: "d9", at: "2026-06-01T14:07:00Z", installClick: "c9", openType: "deferred")
        try fixture.load()
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outputs = try DailyReport(connection: database.connection).run(
            date: day("2026-06-01"), app: "a", outDirectory: out, formats: [.html], allowPartial: true
        ).outputs
        let html = Array(try Data(contentsOf: URL(fileURLWithPath: try #require(outputs.first?.files.first))))
        // Compared as bytes: String.contains matches whole Characters, the very thing that hid the '<'.
        func holds(_ text: String) -> Bool {
            let needle = Array(text.utf8)
            return html.indices.contains { html[$0...].starts(with: needle) }
        }
        #expect(holds("\u{0600}&lt;img src=x onerror=document.body.setAttribute(`data-pwned`,1) \u{0600}&gt;"))
        #expect(holds("/\u{110BD}&lt;svg onload=alert(1) \u{110BD}&gt;"))
        #expect(holds("\u{0600}&lt;b&gt;news\u{0600}&lt;/b&gt;\u{0600}&quot;\u{0600}&#39;\u{0600}&amp;amp;"))
        for tag in ["<img", "<svg onload", "<b>", "\u{0600}\"", "\u{0600}'"] {
            #expect(!holds(tag), "\(tag) in the page")
        }
    }

    @Test("a long link path is cut to fit the chart's label column and keeps its start; a short one is whole")
    func longLabelsFitTheChart() throws {
        let database = try Database()
        defer { database.close() }
        let fixture = Fixture(database.connection)
        try loadSmallWorld(fixture)
        // 28 characters of capitals at 11 px are ~250 px; the column has 170. Until 2026-12-05 the
        // label was cut at 28 characters and drawn right-aligned, so its start ran off the chart.
        fixture.click("c9", path: "/long/" + String(repeating: "A", count: 260), at: "2026-06-01T14:00:00Z")
        fixture.click("c10", path: "/long/" + String(repeating: "\u{6F22}", count: 40), at: "2026-06-01T14:00:00Z")
        try fixture.load()
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outputs = try DailyReport(connection: database.connection).run(
            date: day("2026-06-01"), app: "a", outDirectory: out, formats: [.html], allowPartial: true
        ).outputs
        let html = try String(contentsOfFile: try #require(outputs.first?.files.first), encoding: .utf8)
        // "/long/" is ~33 px by the estimate; 14 capitals of 9 px and the ellipsis fill the rest.
        #expect(html.contains(">/long/" + String(repeating: "A", count: 14) + "…</text>"))
        #expect(html.contains(">/long/" + String(repeating: "\u{6F22}", count: 11) + "…</text>"))
        #expect(html.contains(">/x</text>"))
    }

    @Test("the HTML is self-contained with SVG charts and renders in headless Chromium")
    func htmlRendersInChromium() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outputs = try DailyReport(connection: database.connection).run(
            date: day("2026-06-01"), app: "a", outDirectory: out, formats: [.html], allowPartial: false
        ).outputs
        let path = try #require(outputs.first?.files.first)
        let html = try String(contentsOfFile: path, encoding: .utf8)
        for id in ["chart-links", "chart-funnel", "chart-retention"] {
            #expect(html.contains("<svg id=\"\(id)\""), "missing \(id)")
        }
        #expect(html.contains("class=\"bar-clicks\""))
        #expect(html.contains("class=\"bar-installs\""))
        #expect(html.contains("class=\"funnel-step\""))
        #expect(html.contains("class=\"retention-curve\""))
        for forbidden in ["<script", "src=", "href=", "url(", "@import", "<link", "http:", "https:"] {
            #expect(!html.lowercased().contains(forbidden), "the page references \(forbidden)")
        }

        guard let chromium = Chromium.find() else {
            withKnownIssue("Chromium is not installed and cannot be installed here (\(Chromium.unavailableReason))") {
                throw ChromiumUnavailable()
            }
            return
        }
        let png = out + "/report.png"
        try chromium.screenshot(html: path, png: png)
        let blankHTML = out + "/blank.html"
        try "<!DOCTYPE html><html><body></body></html>".write(toFile: blankHTML, atomically: true, encoding: .utf8)
        let blankPNG = out + "/blank.png"
        try chromium.screenshot(html: blankHTML, png: blankPNG)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: png))
        let blank = try Data(contentsOf: URL(fileURLWithPath: blankPNG))
        #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        // A page with three charts and tables compresses far worse than an empty page of the same size.
        #expect(bytes.count > 4 * blank.count, "report PNG \(bytes.count) bytes, blank PNG \(blank.count) bytes")

        // The page fits an 800 px window: the wide tables (links has 30-odd columns) scroll in their
        // own box. They made the whole page 2,500 px wide before.
        let width = try chromium.scrollWidth(html: path, windowWidth: 800)
        #expect(width <= 800, "the page is \(width) px wide in an 800 px window")
    }

    private func contents(of files: [String]) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for file in files { result[file] = try Data(contentsOf: URL(fileURLWithPath: file)) }
        return result
    }
}
