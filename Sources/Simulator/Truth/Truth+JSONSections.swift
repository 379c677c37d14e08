/// Funnels, retention, devices and rejected events in the truth file.
extension Truth {
    func writeFunnels(_ json: inout JSONBuffer) {
        json.key("funnels")
        json.beginArray()
        for funnel in funnels {
            json.beginObject()
            json.field("link", funnel.link)
            json.key("steps")
            json.beginArray()
            for step in Funnel.steps { json.string(step) }
            json.endArray()
            json.key("cohorts")
            json.beginArray()
            for (day, cohort) in funnel.cohorts.sorted(by: { $0.key < $1.key }) {
                json.beginObject()
                json.field("day", SimulatedTime.dayString(day))
                json.key("counts")
                json.beginArray()
                for count in cohort.counts { json.int(count) }
                json.endArray()
                json.key("step_conversion")
                json.beginArray()
                for step in cohort.counts.indices {
                    if step == 0 || cohort.counts[step - 1] == 0 {
                        json.null()
                    } else {
                        json.number(ratio(cohort.counts[step], cohort.counts[step - 1]))
                    }
                }
                json.endArray()
                json.key("overall_conversion")
                json.beginArray()
                for count in cohort.counts { json.number(ratio(count, cohort.counts[0])) }
                json.endArray()
                json.key("median_seconds")
                json.beginArray()
                for durations in cohort.durations {
                    if let median = Self.medianSeconds(durations) { json.number(median) } else { json.null() }
                }
                json.endArray()
                json.endObject()
            }
            json.endArray()
            json.endObject()
        }
        json.endArray()
    }

    /// The median of millisecond durations in seconds, exact: the middle value, or the mean of the
    /// two middle values for an even count (what PostgreSQL's `percentile_cont(0.5)` returns).
    package static func medianSeconds(_ durations: [Int64]) -> String? {
        guard !durations.isEmpty else { return nil }
        let sorted = durations.sorted()
        let middle = sorted.count / 2
        let twice = sorted.count % 2 == 1 ? 2 * sorted[middle] : sorted[middle - 1] + sorted[middle]
        return exactDecimal(twice, 2000)
    }

    func writeRetention(_ json: inout JSONBuffer) {
        json.key("retention")
        json.beginObject()
        json.key("days")
        json.beginArray()
        for n in RetentionCohort.days { json.int(n) }
        json.endArray()
        json.key("cohorts")
        json.beginArray()
        for cohort in retention {
            json.beginObject()
            json.field("link", cohort.link)
            json.field("day", SimulatedTime.dayString(cohort.day))
            json.field("size", cohort.size)
            json.key("retained")
            json.beginArray()
            for count in cohort.retained { if let count { json.int(count) } else { json.null() } }
            json.endArray()
            json.key("rates")
            json.beginArray()
            for count in cohort.retained {
                if let count { json.number(ratio(count, cohort.size)) } else { json.null() }
            }
            json.endArray()
            json.endObject()
        }
        json.endArray()
        json.endObject()
    }

    func writeDevices(_ json: inout JSONBuffer) {
        json.key("devices")
        json.beginArray()
        for install in devices {
            json.beginObject()
            json.field("device_id", deviceIDs[Int(install.device)])
            json.field("install", SimulatedTime.iso8601(install.install))
            json.field("link", install.link.map { linkPaths[Int($0)] })
            json.key("unattributable")
            json.bool(install.isUnattributable)
            json.endObject()
        }
        json.endArray()
    }

    func writeRejected(_ json: inout JSONBuffer) {
        json.key("rejected")
        json.beginArray()
        for event in rejected {
            json.beginObject()
            json.field("device_id", deviceIDs[Int(event.device)])
            json.field("defect", event.defect.rawValue)
            json.field("code", event.expectedCode)
            json.field("timestamp", SimulatedTime.iso8601(event.time))
            json.field("delivery", event.inBatch ? "batch" : "single")
            json.endObject()
        }
        json.endArray()
    }
}
