// Writing an accepted SDK event straight to its envelope line, without building an `Envelope`:
// the strings are copied from the body into the line (through the same escaping as the encoder),
// so the line is byte for byte what `Envelope.encoded()` would produce (tests check this).

extension EventNormalizer {
    /// Appends the envelope line of a validated event to `lines` (same bytes as
    /// `envelope(of:index:).encoded()`).
    mutating func appendRecord(of event: SDKEvent, index: Int) {
        // The device id is normalised once for both the hashed id and the line.
        event.device.withStringBytes { raw in
            DeviceID.withNormalized(raw) { device in appendRecord(of: event, device: device, index: index) }
        }
    }

    private mutating func appendRecord(of event: SDKEvent, device: UnsafeBufferPointer<UInt8>, index: Int) {
        let (time, clock) = resolveTime(client: event.client, index: index)
        let sdk = sdk(index: index)
        let digest: (UInt64, UInt64)? = event.clientID == nil ? digest(of: event, device: device) : nil
        let bound = lineBound(of: event, sdk: sdk)
        // A single event's buffer is made here, at its line's bound: sized before the bound was
        // known, it was allocated once and then grown (two allocations over 1 KiB and a copy).
        // (Tested for nil and force-unwrapped: binding the optional with `if let` copied it through
        // the runtime's generic value witnesses, ~240 instructions per event.)
        if self.lines == nil { self.lines = LineBuffer(capacity: bound + 1) }
        let lines = self.lines!
        let receivedAtJSON = receivedAtJSON
        let appID = context.appID
        if let sentAt, sentAtJSON?.time != sentAt {
            sentAtJSON = (sentAt, JSONWriter.TimestampText(sentAt))
        }
        let sentAtJSON = sentAt == nil ? nil : sentAtJSON?.text
        lines.appendLine(bound: bound) { w in
            w.raw(#"{"v":1,"id":"#)
            if let digest {
                w.byte(UInt8(ascii: "\""))
                EventHash.writeEventID(digest, clientTime: event.client, to: w.cursor)
                w.advance(by: EventHash.idLength)
                w.byte(UInt8(ascii: "\""))
            } else {
                event.clientID!.withStringBytes { w.string(bytes: $0) }
            }
            w.raw(#","app":"#)
            w.string(appID)
            w.raw(event.kind == .retention ? #","kind":"retention","time":"# : #","kind":"event","time":"#)
            let timeStart = w.cursor
            w.timestamp(time)
            let timeJSON = UnsafeBufferPointer(start: timeStart, count: w.cursor - timeStart)
            w.raw(#","received_at":"#)
            receivedAtJSON.write(to: &w)
            switch clock {
            case .ok: w.raw(#","clock":"ok","name":"#)
            case .skewCorrected: w.raw(#","clock":"skew_corrected","name":"#)
            case .futureClamped: w.raw(#","clock":"future_clamped","name":"#)
            }
            event.name.withStringBytes { w.string(bytes: $0) }
            w.raw(#","device":"#)
            w.string(bytes: device)
            w.raw(event.platform == .ios ? #","platform":"ios""# : #","platform":"android""#)
            if let sdk {
                w.raw(#","sdk":"#)
                w.string(sdk)
            }
            w.raw(#","client_ts":"#)
            // Without a clock correction the client's time is `time`, already formatted above.
            if event.client == time { w.raw(bytes: timeJSON) } else { w.timestamp(event.client) }
            if let sentAtJSON {
                w.raw(#","sent_at":"#)
                sentAtJSON.write(to: &w)
            }
            if let attribution = event.attribution {
                w.raw(#","attribution":{"install_click_id":"#)
                w.optionalString(attribution.installClickID)
                w.raw(#","open_click_id":"#)
                w.optionalString(attribution.openClickID)
                w.raw(#","open_type":"#)
                w.optionalString(attribution.openType)
                w.byte(UInt8(ascii: "}"))
            }
            if let clickID = event.clickID {
                w.raw(#","click_id":"#)
                clickID.withStringBytes { w.string(bytes: $0) }
            }
            if let data = event.data {
                w.raw(#","data":"#)
                data.document.bytes.withUnsafeBufferPointer {
                    w.rawJSON(bytes: UnsafeBufferPointer(rebasing: $0[data.byteRange]))
                }
            }
            if let merged = event.mergedMetadata {
                w.raw(#","metadata":"#)
                merged.withUnsafeBufferPointer { w.rawJSON(bytes: $0) }
            } else if let metadata = event.metadata {
                w.raw(#","metadata":"#)
                metadata.document.bytes.withUnsafeBufferPointer {
                    w.rawJSON(bytes: UnsafeBufferPointer(rebasing: $0[metadata.byteRange]))
                }
            }
            w.byte(UInt8(ascii: "}"))
        }
    }

    /// An upper bound of the line's length. Raw JSON string lengths bound their unescaped UTF-8
    /// lengths, and escaping multiplies by at most 6.
    private func lineBound(of event: SDKEvent, sdk: String?) -> Int {
        var bound = 512 + 4 * JSONWriter.timestampBound + 36
        // Raw string lengths (with quotes) bound their unescaped lengths.
        bound += 6 * (event.name.byteRange.count + event.device.byteRange.count)
        bound += 6 * ((event.clientID?.byteRange.count ?? 0) + (event.clickID?.byteRange.count ?? 0))
        bound += JSONWriter.bound(of: context.appID)
        @inline(__always) func add(_ text: String?) {
            if let text { bound += JSONWriter.bound(of: text) }
        }
        add(sdk)
        bound += event.attribution?.bound ?? 0
        bound +=
            (event.data?.byteRange.count ?? 0)
            + max(event.metadata?.byteRange.count ?? 0, event.mergedMetadata?.count ?? 0)
        return bound
    }
}
