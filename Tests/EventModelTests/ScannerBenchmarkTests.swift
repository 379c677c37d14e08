import Testing

@testable import EventModel

@Suite struct ScannerBenchmarkTests {
    @Test("the benchmark's sample bodies are valid and normalise without rejections")
    func samples() throws {
        let context = RequestContext(appID: "app", receivedAt: Timestamp(iso8601: "2026-07-20T08:00:01.000Z")!)
        for body in ScannerBenchmark.sampleBodies.dropLast() {
            #expect(try Normalizer.single(body: body, kind: .event, context: context).rejected.isEmpty)
        }
        let batch = try Normalizer.batch(body: ScannerBenchmark.sampleBodies.last!, context: context)
        #expect(batch.accepted.count == 100)
        #expect(batch.rejected.isEmpty)
    }

    @Test("a short benchmark run reports a rate for every parser")
    func shortRun() {
        let result = ScannerBenchmark.run(seconds: 0.01)
        #expect(result.scannerMBps > 0)
        #expect(result.foundationMBps > 0)
        #expect(result.normalizedEventsPerSecond > 0)
        #expect(result.encodedEventsPerSecond > 0)
        #expect(result.description.hasPrefix("scanner "))
    }
}
