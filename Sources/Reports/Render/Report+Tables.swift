// The tabular form of each report: column names follow the SQL views (docs/reports.md).

extension LinkReport {
    package var tables: [ReportTable] {
        let columns = [
            "path", "day", "clicks", "universal_link_opens", "matched_installs", "attributed_installs", "install_rate",
            "reengagements", "clicks_ios", "clicks_android", "universal_link_opens_ios", "universal_link_opens_android",
            "matched_installs_ios", "matched_installs_android", "attributed_installs_ios",
            "attributed_installs_android",
            "reengagements_ios", "reengagements_android", "events", "retention_events", "revenue",
        ]
        let links = rows.map { row -> [ReportValue] in
            [
                .text(row.path), .text(row.day.iso8601), .int(row.clicks), .int(row.universalLinkOpens),
                .int(row.matchedInstalls), .int(row.attributedInstalls), .decimal(row.installRate),
                .int(row.reengagements),
                .int(row.ios.clicks), .int(row.android.clicks), .int(row.ios.universalLinkOpens),
                .int(row.android.universalLinkOpens), .int(row.ios.matchedInstalls), .int(row.android.matchedInstalls),
                .int(row.ios.attributedInstalls), .int(row.android.attributedInstalls), .int(row.ios.reengagements),
                .int(row.android.reengagements), .map(row.events.mapValues { .int($0) }),
                .map(row.retentionEvents.mapValues { .int($0) }), .map(row.revenue.mapValues { .text($0) }),
            ]
        }
        let utmRows = utm.map { row -> [ReportValue] in
            [
                .text(row.path), .text(row.day.iso8601), .text(row.source), .text(row.medium), .text(row.campaign),
                .int(row.clicks), .int(row.universalLinkOpens), .int(row.matchedInstalls), .int(row.attributedInstalls),
                .decimal(row.installRate),
            ]
        }
        return [
            ReportTable(name: "links", columns: columns, rows: links),
            ReportTable(
                name: "utm",
                columns: [
                    "path", "day", "utm_source", "utm_medium", "utm_campaign", "clicks", "universal_link_opens",
                    "matched_installs", "attributed_installs", "install_rate",
                ], rows: utmRows),
        ]
    }
}

extension AttributionReport {
    package var tables: [ReportTable] {
        let links = rows.map { row -> [ReportValue] in
            [
                .text(row.path), .text(row.day.iso8601), .int(row.matchedInstalls), .int(row.attributedInstalls),
                .int(row.cohortActions), .int(row.activityActions), .int(row.lastTouchOpens),
                .map(row.cohortEvents.mapValues { .int($0) }), .map(row.activityEvents.mapValues { .int($0) }),
                .map(row.cohortRevenue.mapValues { .text($0) }), .map(row.activityRevenue.mapValues { .text($0) }),
            ]
        }
        let installRows = installs.map { row -> [ReportValue] in
            [
                .text(row.day.iso8601), .int(row.installs), .int(row.attributedInstalls), .int(row.organicInstalls),
                .int(row.unattributableInstalls),
            ]
        }
        return [
            ReportTable(
                name: "attribution",
                columns: [
                    "path", "day", "matched_installs", "attributed_installs", "cohort_actions", "activity_actions",
                    "last_touch_opens", "cohort_events", "activity_events", "cohort_revenue", "activity_revenue",
                ], rows: links),
            ReportTable(
                name: "installs",
                columns: ["day", "installs", "attributed_installs", "organic_installs", "unattributable_installs"],
                rows: installRows),
        ]
    }
}

extension FunnelReport {
    package var tables: [ReportTable] {
        [
            ReportTable(
                name: "funnel",
                columns: [
                    "funnel_id", "funnel_name", "path", "day", "step", "step_name", "devices",
                    "conversion_from_previous",
                    "conversion_overall", "median_seconds_from_previous",
                ],
                rows: rows.map { row in
                    [
                        .text(row.funnelID), .text(row.funnelName), .text(row.path), .text(row.day.iso8601),
                        .int(row.step),
                        .text(row.stepName), .int(row.devices), .decimal(row.conversionFromPrevious),
                        .decimal(row.conversionOverall), .decimal(row.medianSecondsFromPrevious),
                    ]
                })
        ]
    }
}

extension RetentionReport {
    package var tables: [ReportTable] {
        let days = RetentionRow.days
        return [
            ReportTable(
                name: "retention",
                columns: ["path", "cohort_day", "cohort_size"] + days.map { "d\($0)" } + days.map { "d\($0)_rate" },
                rows: rows.map { row in
                    [.text(row.path), .text(row.cohortDay.iso8601), .int(row.cohortSize)]
                        + row.retained.map { ReportValue.int($0) } + row.rates.map { ReportValue.decimal($0) }
                })
        ]
    }
}
