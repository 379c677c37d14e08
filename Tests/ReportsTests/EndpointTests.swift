import Reports
import Testing

@Suite struct EndpointTests {
    @Test("the API answers JSON with the watermark, and errors with a status and a stable code")
    func respond() throws {
        let database = try Database()
        defer { database.close() }
        try loadSmallWorld(Fixture(database.connection))
        let ok = ReportEndpoint.respond(
            kind: "retention", parameters: ["app": "a", "from": "2026-06-01", "to": "2026-06-01"],
            connection: database.connection, today: day("2026-06-30"), defaultFormat: .json)
        #expect(ok.status == 200 && ok.exitCode == 0 && ok.contentType == "application/json")
        #expect(
            ok.body.hasPrefix(
                #"{"report":"retention","app":"a","from":"2026-06-01","to":"2026-06-01","watermark":"2026-06-05T12:00:00.000000Z","tables":{"retention":[{"path":"/x","cohort_day":"2026-06-01","cohort_size":2,"d1":1,"d3":0,"d7":null,"#
            ))

        let unknownApp = ReportEndpoint.respond(
            kind: "links", parameters: ["app": "nope"], connection: database.connection, today: day("2026-06-30"),
            defaultFormat: .json)
        #expect(unknownApp.status == 404 && unknownApp.exitCode == 64)
        #expect(unknownApp.body == #"{"error":"unknown_app","message":"unknown app nope"}"# + "\n")

        let badKind = ReportEndpoint.respond(
            kind: "revenue", parameters: ["app": "a"], connection: database.connection, today: day("2026-06-30"),
            defaultFormat: .table)
        #expect(badKind.status == 400 && badKind.contentType.hasPrefix("text/plain"))

        let table = ReportEndpoint.respond(
            kind: "funnel", parameters: ["app": "a", "from": "2026-06-01", "to": "2026-06-01"],
            connection: database.connection, today: day("2026-06-30"), defaultFormat: .table)
        #expect(table.body.contains("funnel report for app a, 2026-06-01 to 2026-06-01"))
        #expect(table.body.contains("median_seconds_from_previous"))
    }
}
