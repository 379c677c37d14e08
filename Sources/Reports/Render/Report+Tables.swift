// The tabular form of each report: column names follow the SQL views (docs/reports.md). Each table
// puts a row's values into a `ReportRowWriter`, in the order of its columns.

extension LinkReport {
    package var tables: [ReportTable] {
        let rows = self.rows, utm = self.utm
        return [
            ReportTable(
                name: "links",
                columns: [
                    "path", "day", "clicks", "universal_link_opens", "matched_installs", "attributed_installs",
                    "install_rate", "reengagements", "clicks_ios", "clicks_android", "universal_link_opens_ios",
                    "universal_link_opens_android", "matched_installs_ios", "matched_installs_android",
                    "attributed_installs_ios", "attributed_installs_android", "reengagements_ios",
                    "reengagements_android", "events", "retention_events", "revenue", "events_ios", "events_android",
                    "retention_events_ios", "retention_events_android", "revenue_ios", "revenue_android",
                ], count: rows.count
            ) { index, out in
                let row = rows[index]
                out.put(.text(row.path))
                out.put(.text(row.day.iso8601))
                out.put(.int(row.clicks))
                out.put(.int(row.universalLinkOpens))
                out.put(.int(row.matchedInstalls))
                out.put(.int(row.attributedInstalls))
                out.put(.decimal(row.installRate))
                out.put(.int(row.reengagements))
                out.put(.int(row.ios.clicks))
                out.put(.int(row.android.clicks))
                out.put(.int(row.ios.universalLinkOpens))
                out.put(.int(row.android.universalLinkOpens))
                out.put(.int(row.ios.matchedInstalls))
                out.put(.int(row.android.matchedInstalls))
                out.put(.int(row.ios.attributedInstalls))
                out.put(.int(row.android.attributedInstalls))
                out.put(.int(row.ios.reengagements))
                out.put(.int(row.android.reengagements))
                out.put(.counts(row.events))
                out.put(.counts(row.retentionEvents))
                out.put(.amounts(row.revenue))
                out.put(.counts(row.ios.events))
                out.put(.counts(row.android.events))
                out.put(.counts(row.ios.retentionEvents))
                out.put(.counts(row.android.retentionEvents))
                out.put(.amounts(row.ios.revenue))
                out.put(.amounts(row.android.revenue))
            },
            ReportTable(
                name: "utm",
                columns: [
                    "path", "day", "utm_source", "utm_medium", "utm_campaign", "clicks", "universal_link_opens",
                    "matched_installs", "attributed_installs", "install_rate",
                ], count: utm.count
            ) { index, out in
                let row = utm[index]
                out.put(.text(row.path))
                out.put(.text(row.day.iso8601))
                out.put(.text(row.source))
                out.put(.text(row.medium))
                out.put(.text(row.campaign))
                out.put(.int(row.clicks))
                out.put(.int(row.universalLinkOpens))
                out.put(.int(row.matchedInstalls))
                out.put(.int(row.attributedInstalls))
                out.put(.decimal(row.installRate))
            },
        ]
    }
}

extension AttributionReport {
    package var tables: [ReportTable] {
        let rows = self.rows, installs = self.installs
        return [
            ReportTable(
                name: "attribution",
                columns: [
                    "path", "day", "matched_installs", "attributed_installs", "cohort_actions", "activity_actions",
                    "last_touch_opens", "cohort_events", "activity_events", "cohort_revenue", "activity_revenue",
                ], count: rows.count
            ) { index, out in
                let row = rows[index]
                out.put(.text(row.path))
                out.put(.text(row.day.iso8601))
                out.put(.int(row.matchedInstalls))
                out.put(.int(row.attributedInstalls))
                out.put(.int(row.cohortActions))
                out.put(.int(row.activityActions))
                out.put(.int(row.lastTouchOpens))
                out.put(.counts(row.cohortEvents))
                out.put(.counts(row.activityEvents))
                out.put(.amounts(row.cohortRevenue))
                out.put(.amounts(row.activityRevenue))
            },
            ReportTable(
                name: "installs",
                columns: ["day", "installs", "attributed_installs", "organic_installs", "unattributable_installs"],
                count: installs.count
            ) { index, out in
                let row = installs[index]
                out.put(.text(row.day.iso8601))
                out.put(.int(row.installs))
                out.put(.int(row.attributedInstalls))
                out.put(.int(row.organicInstalls))
                out.put(.int(row.unattributableInstalls))
            },
        ]
    }
}

extension FunnelReport {
    package var tables: [ReportTable] {
        let rows = self.rows
        return [
            ReportTable(
                name: "funnel",
                columns: [
                    "funnel_id", "funnel_name", "path", "day", "step", "step_name", "devices",
                    "conversion_from_previous", "conversion_overall", "median_seconds_from_previous",
                ], count: rows.count
            ) { index, out in
                let row = rows[index]
                out.put(.text(row.funnelID))
                out.put(.text(row.funnelName))
                out.put(.text(row.path))
                out.put(.text(row.day.iso8601))
                out.put(.int(row.step))
                out.put(.text(row.stepName))
                out.put(.int(row.devices))
                out.put(.decimal(row.conversionFromPrevious))
                out.put(.decimal(row.conversionOverall))
                out.put(.decimal(row.medianSecondsFromPrevious))
            }
        ]
    }
}

extension RetentionReport {
    package var tables: [ReportTable] {
        let days = RetentionRow.days
        let rows = self.rows
        return [
            ReportTable(
                name: "retention",
                columns: ["path", "cohort_day", "cohort_size"] + days.map { "d\($0)" } + days.map { "d\($0)_rate" },
                count: rows.count
            ) { index, out in
                let row = rows[index]
                out.put(.text(row.path))
                out.put(.text(row.cohortDay.iso8601))
                out.put(.int(row.cohortSize))
                for value in row.retained { out.put(.int(value)) }
                for rate in row.rates { out.put(.decimal(rate)) }
            }
        ]
    }
}
