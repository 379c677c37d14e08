import Foundation

/// Measures the JSON scanner's throughput against Foundation's `JSONSerialization` on the same bodies.
///
/// Not used on the request path; the CLI exposes it so throughput can be checked on a machine
/// (build with `-c release`: debug builds are an order of magnitude slower). Rates are per second
/// of this thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), so other processes competing for the
/// cores do not distort the comparison.
package enum ScannerBenchmark {
    /// One measurement.
    package struct Result: Sendable, CustomStringConvertible {
        /// Bytes in one pass over all bodies.
        package var bytesPerPass: Int
        /// Passes made by the scanner.
        package var scannerPasses: Int
        /// Passes made by `JSONSerialization`.
        package var foundationPasses: Int
        /// The scanner's throughput in MB/s (10^6 bytes per second).
        package var scannerMBps: Double
        /// `JSONSerialization`'s throughput in MB/s.
        package var foundationMBps: Double
        /// Events per second through `Normalizer.batch` plus `Envelope.encode(into:)` on the
        /// 100-event sample batch, on one thread.
        package var normalizedEventsPerSecond: Double
        /// Events per second through `Normalizer.encodedBatch` (lines written straight from the body).
        package var encodedEventsPerSecond: Double

        /// A one-line summary.
        package var description: String {
            let ratio = foundationMBps > 0 ? scannerMBps / foundationMBps : 0
            return "scanner \(Int(scannerMBps.rounded())) MB/s, JSONSerialization \(Int(foundationMBps.rounded())) MB/s"
                + " (\((ratio * 10).rounded() / 10)x) over \(bytesPerPass) bytes per pass;"
                + " normalise+encode \(Int(normalizedEventsPerSecond.rounded())) events/s,"
                + " encodedBatch \(Int(encodedEventsPerSecond.rounded())) events/s"
        }
    }

    /// Realistic bodies: every SDK literal of the wire format, one at a time and as a 100-event batch.
    package static var sampleBodies: [[UInt8]] {
        let singles = sampleEvents.map { Array($0.utf8) }
        var batch = #"{"sent_at":"2026-06-01T10:20:31.000Z","batch":["#
        for k in 0..<100 {
            if k > 0 { batch += "," }
            var event = sampleEvents[k % sampleEvents.count]
            event.removeLast()
            batch += event + #","type":"event","message_id":"msg-\#(k)-7f3c2a"}"#
        }
        batch += "]}"
        return singles + [Array(batch.utf8)]
    }

    static let sampleEvents: [String] = [
        #"{"event_name":"purchase","data":{"revenue":29.99,"currency":"USD"},"timestamp":"2026-06-01T10:20:30.123Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#,
        #"{"event_name":"opened_via_universal_link","data":{"url":"https://acme.godetour.link/VnAqasAabE/articles/2?utm_source=news"},"timestamp":"2026-06-01T10:20:30.123Z","platform":"android","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#,
        #"{"event_name":"purchase","data":{"revenue":29.99},"timestamp":"2026-04-02T15:51:10.000Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","sdk":"react-native"}"#,
        #"{"event_name":"add_to_cart","data":{"sku":"abc"},"timestamp":"2026-07-20T08:00:00.000Z","platform":"ios","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b","attribution":{"install_click_id":"clk_123","open_click_id":null,"open_type":"organic"}}"#,
        #"{"event_name":"app_open","timestamp":"2026-06-01T10:20:30.123Z","platform":"android","device_id":"3f2b8c1e-9a4d-4e2b-8f1a-2c3d4e5f6a7b"}"#,
    ]

    /// Scans `bodies` (default: `sampleBodies`) repeatedly for about `seconds` per parser.
    ///
    /// - Parameters:
    ///   - bodies: the documents; each must be valid JSON.
    ///   - seconds: wall time spent per parser.
    package static func run(bodies: [[UInt8]]? = nil, seconds: Double = 2) -> Result {
        let bodies = bodies ?? sampleBodies
        let bytesPerPass = bodies.reduce(0) { $0 + $1.count }
        let datas = bodies.map { Data($0) }
        var sink = 0
        // Every body counts in the rate, so every body must parse, with both (until 2026-12-05 one
        // that failed was skipped by `try?` and its bytes counted all the same).
        for (index, body) in bodies.enumerated() {
            precondition((try? JSONDocument(parsing: body)) != nil, "body \(index) is not valid JSON for the scanner")
            precondition(
                (try? JSONSerialization.jsonObject(with: datas[index])) is [String: Any],
                "body \(index) is not a JSON object for JSONSerialization")
        }

        func measure(_ pass: () -> Void) -> (passes: Int, mbps: Double) {
            let start = threadCPUSeconds()
            var passes = 0
            while threadCPUSeconds() - start < seconds {
                for _ in 0..<10 { pass() }
                passes += 10
            }
            return (passes, Double(passes * bytesPerPass) / (threadCPUSeconds() - start) / 1e6)
        }

        let scanner = measure {
            for body in bodies {
                if let document = try? JSONDocument(parsing: body) { sink &+= document.tape.count }
            }
        }
        let foundation = measure {
            for data in datas {
                if let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
                    sink &+= object.count
                }
            }
        }
        precondition(sink != 0, "no body was measured")
        return Result(
            bytesPerPass: bytesPerPass, scannerPasses: scanner.passes, foundationPasses: foundation.passes,
            scannerMBps: scanner.mbps, foundationMBps: foundation.mbps,
            normalizedEventsPerSecond: normalizeAndEncode(seconds: seconds, fused: false),
            encodedEventsPerSecond: normalizeAndEncode(seconds: seconds, fused: true))
    }

    /// Events per second through the normaliser and the envelope encoder on the sample batch;
    /// `fused` uses `Normalizer.encodedBatch` instead of `batch` plus `Envelope.encode(into:)`.
    static func normalizeAndEncode(seconds: Double, fused: Bool) -> Double {
        let body = sampleBodies[sampleBodies.count - 1]
        let context = RequestContext(appID: "app_bench", sdkHeader: "ios/1.0.2", receivedAt: .now())
        var buffer: [UInt8] = []
        var events = 0
        let start = threadCPUSeconds()
        while threadCPUSeconds() - start < seconds {
            for _ in 0..<10 where fused {
                guard let result = try? Normalizer.encodedBatch(body: body, context: context) else { return 0 }
                events += result.records.count
            }
            for _ in 0..<10 where !fused {
                guard let result = try? Normalizer.batch(body: body, context: context) else { return 0 }
                buffer.removeAll(keepingCapacity: true)
                for envelope in result.accepted {
                    envelope.encode(into: &buffer)
                    buffer.append(UInt8(ascii: "\n"))
                }
                events += result.accepted.count
            }
        }
        return Double(events) / (threadCPUSeconds() - start)
    }

    /// CPU time consumed by the calling thread, in seconds.
    static func threadCPUSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
