import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The report API as shipped: the real `detour-analytics run` binary (its production report
/// provider and pool), a click posted to ingest, loaded by the aggregator, read back over HTTP.
@Suite(.serialized)
struct ReportAPIEndToEndTests {
    @Test("a click posted to ingest shows up in GET /api/reports/links with the load watermark")
    func clickReachesReportAPI() throws {
        let database = try TestDatabase.make()
        defer { database.drop() }
        let data = try TemporaryDirectory()
        let environment = ["DATABASE_URL": database.url, "DETOUR_DATA_DIR": data.path]
        let keys = try PipelineProcess.createApp(id: "report-app", name: "Reports", environment: environment)
        let secret = try #require(keys["secret_key"])
        let publishable = try #require(keys["publishable_key"])

        let pipeline = try PipelineProcess(
            ["run", "--http-addr", "127.0.0.1:0", "--load-interval", "200ms"], environment: environment)
        defer { pipeline.signal(SIGTERM); _ = pipeline.waitForExit(timeout: .seconds(20)) }
        let base = try #require(
            pipeline.waitForLine(startingWith: "listening on "), "no listening line; log: \(pipeline.standardError)")
        let headers = ["Authorization": "Bearer \(secret)", "X-App-ID": "report-app"]

        let click =
            #"{"clicks":[{"click_id":"clk_e2e_1","url":"https://acme.godetour.link/VnAqasAabE/a","timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","kind":"web"}]}"#
        var request = URLRequest(url: URL(string: base + "/api/link/events")!)
        request.httpMethod = "POST"
        request.httpBody = Data(click.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        #expect(try HTTP.send(request).status == 200)

        // Bounded: the aggregator loads every 200 ms; give it 120 s on a busy machine (a fresh
        // process's first cycle creates partitions and loads against a shared PostgreSQL).
        var rows: [[String: Any]] = []
        var watermark: String?
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            let response = try HTTP.get(base + "/api/reports/links?from=2026-06-01&to=2026-06-01", headers: headers)
            #expect(response.status == 200, "\(response.text)")
            let body = (try? JSONSerialization.jsonObject(with: response.body) as? [String: Any]) ?? [:]
            rows = ((body["tables"] as? [String: Any])?["links"] as? [[String: Any]]) ?? []
            watermark = body["watermark"] as? String
            if !rows.isEmpty { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(rows.count == 1, "the click never reached the report; log: \(pipeline.standardError)")
        #expect(rows.first?["clicks"] as? Int == 1)
        #expect(watermark?.hasSuffix("Z") == true)

        // The API streams its JSON (chunked, made as it is sent): byte for byte what
        // `report links --format json` prints for the same range.
        let api = try HTTP.get(base + "/api/reports/links?from=2026-06-01&to=2026-06-01", headers: headers)
        let cli = try PipelineProcess.runToEnd(
            [
                "report", "links", "--app", "report-app", "--from", "2026-06-01", "--to", "2026-06-01", "--format",
                "json",
            ],
            environment: environment)
        #expect(cli.status == 0, "\(cli.errors)")
        #expect(api.text == cli.output)
        #expect(api.text.hasSuffix("}}\n"))
        // A CSV cannot hold the watermark: the CLI states it on standard error (stdout stays the
        // CSV scripts parse), the API in a header.
        let csvCLI = try PipelineProcess.runToEnd(
            [
                "report", "links", "--app", "report-app", "--from", "2026-06-01", "--to", "2026-06-01", "--format",
                "csv",
            ],
            environment: environment)
        #expect(csvCLI.status == 0 && csvCLI.output.hasPrefix("path,day,"), "\(csvCLI.errors)")
        let apiWatermark = try #require(api.headers["x-detour-watermark"])
        #expect(csvCLI.errors.contains("report: load watermark \(apiWatermark)"), "\(csvCLI.errors)")
        #expect(api.text.contains(#""watermark":"\#(apiWatermark)""#))

        // Compressed as the client accepts (URLSession's libcurl decodes zstd and gzip itself, and
        // offers both unless told otherwise): the same text, with its coding named.
        for (accept, coding) in [
            (nil, "zstd"), ("zstd", "zstd"), ("gzip;q=1, zstd;q=0.5", "gzip"), ("identity", nil), ("br", nil),
        ] as [(String?, String?)] {
            var acceptHeaders = headers
            acceptHeaders["Accept-Encoding"] = accept
            let answer = try HTTP.get(base + "/api/reports/links?from=2026-06-01&to=2026-06-01", headers: acceptHeaders)
            #expect(answer.status == 200 && answer.text == cli.output, "Accept-Encoding: \(accept ?? "libcurl's")")
            #expect(answer.headers["content-encoding"] == coding, "Accept-Encoding: \(accept ?? "libcurl's")")
            #expect(answer.headers["vary"] == "Accept-Encoding")
        }

        // One link (`?path=`, percent-encoded or not), as `report links --path` prints it.
        let oneLink = try HTTP.get(
            base + "/api/reports/links?from=2026-06-01&to=2026-06-01&path=%2Fa", headers: headers)
        let oneLinkCLI = try PipelineProcess.runToEnd(
            [
                "report", "links", "--app", "report-app", "--from", "2026-06-01", "--to", "2026-06-01", "--path", "/a",
                "--format", "json",
            ], environment: environment)
        #expect(oneLink.status == 200 && oneLinkCLI.status == 0)
        #expect(oneLink.text == oneLinkCLI.output)
        #expect(oneLink.text.contains(#""to":"2026-06-01","path":"/a","watermark""#))
        #expect(oneLink.text.contains(#""links":[{"path":"/a","day":"2026-06-01","clicks":1,"#))
        let otherLink = try HTTP.get(
            base + "/api/reports/links?from=2026-06-01&to=2026-06-01&path=/b", headers: headers)
        #expect(otherLink.status == 200 && otherLink.text.contains(#""tables":{"links":[],"utm":[]}}"#))

        let publishableRead = try HTTP.get(
            base + "/api/reports/links", headers: ["Authorization": "Bearer \(publishable)", "X-App-ID": "report-app"])
        #expect(publishableRead.status == 403)
        let metrics = try HTTP.get(base + "/metrics").text
        #expect(metrics.contains(#"ingest_requests_total{route="reports_links",status="200"}"#))
        #expect(metrics.contains(#"ingest_request_duration_seconds_count{route="reports_links"}"#))
    }
}
