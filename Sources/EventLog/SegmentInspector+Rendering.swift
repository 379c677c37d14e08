import Glibc

extension SegmentInspector {
    /// `segments list` output: a header and one line per segment.
    package static func renderList(_ reports: [SegmentReport]) -> String {
        // Columns padded to their widths (they were single-space runs under a padded header, so
        // nothing lined up); still split by runs of spaces for awk.
        let width = max("segment".count, reports.map(\.path.count).max() ?? 0)
        var out =
            leftAligned("segment", width) + "  state   " + rightAligned("frames", 7) + "  "
            + rightAligned("records", 9) + "  " + rightAligned("bytes", 16) + "  " + rightAligned("ratio", 6)
            + "  " + leftAligned("received_at range", 52) + "  damage\n"
        for report in reports {
            out += report.renderedLine(pathWidth: width) + "\n"
        }
        let records = reports.reduce(0) { $0 + $1.records }
        let bytes = reports.reduce(Int64(0)) { $0 + $1.bytes }
        let zeros = reports.reduce(Int64(0)) { $0 + $1.zeroTailBytes }
        let preallocated = zeros > 0 ? " (\(bytes - zeros) of data, \(zeros) preallocated zeros)" : ""
        out += "total: \(reports.count) segments, \(records) records, \(bytes) bytes on disk\(preallocated)\n"
        return out
    }
}

extension SegmentReport {
    /// One line: path, open/sealed, frames, records, bytes (of data; an open segment's preallocated
    /// zeros after them as `+N`), compression ratio, time range, damage.
    package func renderedLine(pathWidth: Int = 0) -> String {
        let dataBytes = bytes - zeroTailBytes
        let ratio = dataBytes > 0 ? Double(uncompressedBytes) / Double(dataBytes) : 0
        let range = receivedAtRange.map { "\($0.first) .. \($0.last)" } ?? "-"
        let size = zeroTailBytes > 0 ? "\(dataBytes)+\(zeroTailBytes)" : "\(bytes)"
        return leftAligned(path, pathWidth) + "  \(isOpen ? "open  " : "sealed")  " + rightAligned("\(goodFrames)", 7)
            + "  " + rightAligned("\(records)", 9) + "  " + rightAligned(size, 16) + "  "
            + rightAligned(formatRatio(ratio), 6) + "  " + leftAligned(range, 52) + "  "
            + (damage.isEmpty ? "ok" : "\(damage.count) damaged")
    }

    /// What an incomplete last frame of the open segment is, for the renderings.
    static let tailNote =
        "the open segment's last frame: a write in progress, or a torn tail its writer cuts at its next start"

    /// `segments inspect FILE` output: the summary line and one line per frame.
    package func rendered() -> String {
        var out = renderedLine() + "\n"
        let widths = [12, 5, 8, 12, 13, 12, 24]
        let header = ["offset", "codec", "records", "frame_bytes", "ndjson_bytes", "first_seq", "committed_at"]
        out += zip(header, widths).map { rightAligned($0, $1) }.joined(separator: "  ") + "  status\n"
        for (index, frame) in frames.enumerated() {
            let codec = frame.codec?.rawValue ?? "-"
            let sequence = frame.firstSequence.map(String.init) ?? "-"
            let committed = frame.committedAt.map(formatMicros) ?? "-"
            let cells = [
                "\(frame.offset)", codec, "\(frame.records)", "\(frame.frameBytes)", "\(frame.uncompressedBytes)",
                sequence, committed,
            ]
            let status: String
            if let problem = frame.problem {
                let isTail = index == incompleteTailIndex
                status = isTail ? "INCOMPLETE: \(problem) (\(Self.tailNote))" : "DAMAGED: \(problem)"
            } else {
                status = "ok"
            }
            out += zip(cells, widths).map { rightAligned($0, $1) }.joined(separator: "  ") + "  " + status + "\n"
        }
        if zeroTailBytes > 0 {
            out +=
                rightAligned("\(bytes - zeroTailBytes)", 12)
                + "  zero tail: \(zeroTailBytes) bytes preallocated by the writer (not data)\n"
        }
        return out
    }
}

extension VerifyReport {
    /// `segments verify` output: every damaged frame with its position, then a verdict line.
    package func rendered() -> String {
        var out = ""
        for segment in segments {
            for frame in segment.damage {
                let lost =
                    frame.records > 0
                    ? "; \(frame.records) record\(frame.records == 1 ? "" : "s") lost"
                        + (frame.firstSequence.map { " from sequence \($0)" } ?? "") : ""
                out +=
                    "DAMAGED \(segment.path) offset \(frame.offset) (\(frame.frameBytes) bytes): \(frame.problem ?? "")\(lost)\n"
            }
        }
        for segment in segments {
            if let tail = segment.incompleteTail {
                out +=
                    "incomplete \(segment.path) offset \(tail.offset) (\(tail.frameBytes) bytes): "
                    + "\(tail.problem ?? ""); not counted as damage: \(SegmentReport.tailNote)\n"
            }
        }
        let frames = segments.reduce(0) { $0 + $1.goodFrames }
        let records = segments.reduce(0) { $0 + $1.records }
        let damaged = segments.reduce(0) { $0 + $1.damage.count }
        out +=
            isHealthy
            ? "ok: \(segments.count) segments, \(frames) frames, \(records) records verified\n"
            : "FAILED: \(damaged) damaged regions in \(segments.count) segments (\(frames) good frames, \(records) records)\n"
        return out
    }
}

private func leftAligned(_ text: String, _ width: Int) -> String {
    text + String(repeating: " ", count: max(0, width - text.count))
}

private func rightAligned(_ text: String, _ width: Int) -> String {
    String(repeating: " ", count: max(0, width - text.count)) + text
}

private func formatRatio(_ ratio: Double) -> String {
    let tenths = Int((ratio * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)x"
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for microseconds since the epoch.
func formatMicros(_ micros: Int64) -> String {
    var seconds = time_t(micros / 1_000_000)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    func pad(_ value: Int32, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
    return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
        + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(micros % 1_000_000 / 1000), 3))Z"
}
