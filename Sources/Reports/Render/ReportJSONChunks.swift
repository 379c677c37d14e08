import Dispatch
package import JSONText
import Synchronization

/// A large report's JSON written on two threads: the rows cut into chunks of about a piece's size,
/// written by the calling thread (the report worker) and one helper, and handed out in order on the
/// calling thread, so the bytes are those of `ReportJSONStream` written alone (its parts,
/// `ReportJSONStream.part(from:to:)`, are the same code). A 30-day per-link report at 1,000 links is
/// ~54 MB of JSON, ~70-140 ms of writing on one core with no hot spot.
///
/// Bounded: at most `window` chunks are written ahead of the one handed out next (the helper
/// waits), so the writing holds a few pieces beside what the body has taken. The helper takes its
/// chunks as it comes: if it starts late (its queue busy), the calling thread writes them itself.
package final class ReportJSONChunks: @unchecked Sendable {
    /// `@unchecked Sendable`: `stream`, `size` and `window` do not change after `init`; everything
    /// else is in `state`, and a chunk's buffer belongs to the thread writing it until it is stored.
    private struct State {
        /// Where the next chunk to hand out to a writer starts; nil once every chunk is taken.
        var next: ReportJSONStream.Position? = ReportJSONStream.Position(table: 0, row: -1)
        /// Chunks handed to writers so far, and handed out to the body so far.
        var taken = 0
        var delivered = 0
        /// Written chunks not yet handed out, by number.
        var written: [Int: JSONText] = [:]
        /// Bytes and rows written so far per table, in chunks within one table: each table's bytes per
        /// row, to size its next chunks.
        var tableBytes: [Int]
        var tableRows: [Int]
        /// Emptied buffers to write the next chunks into.
        var spare: [JSONText] = []
        var isStopped = false
    }

    private let stream: ReportJSONStream
    private let size: Int
    private let window: Int
    private let state: Mutex<State>
    /// Signalled when a chunk is stored (for the calling thread) or handed out (for the helper).
    private let changed = DispatchSemaphore(value: 0)
    private let helperChanged = DispatchSemaphore(value: 0)

    private init(_ stream: ReportJSONStream, size: Int, window: Int) {
        self.stream = stream
        self.size = max(size, 1)
        self.window = max(window, 2)
        let zeros = Array(repeating: 0, count: stream.tables.count)
        state = Mutex(State(tableBytes: zeros, tableRows: zeros))
    }

    /// True when `stream` is worth a second thread: its estimate is at least `pieces` pieces of `size`.
    package static func isWorthSplitting(_ stream: ReportJSONStream, size: Int, pieces: Int = 4) -> Bool {
        stream.estimatedSize >= pieces * max(size, 1)
    }

    /// Writes the whole of `stream` (a fresh one) in chunks of about `size` bytes (whole rows: a
    /// chunk may be smaller or larger), on the calling thread and one helper (from Dispatch's global
    /// queue), and hands each to `body` in order on the calling thread. `body` may take the chunk's bytes (`takeBytes`); a buffer it
    /// leaves is reused. `buffer` makes the buffer for a chunk (it may reuse memory handed back).
    /// Stops when `body` returns false; the helper stops at its next chunk. `ahead`, when given, is
    /// called before each chunk is handed out with how many chunks are taken by a writer and not yet
    /// handed out (at most `window`, the chunk itself included: the tests' view of the memory held).
    package static func forEachChunk(
        of stream: ReportJSONStream, size: Int, window: Int = 4,
        buffer: @escaping @Sendable () -> JSONText = { JSONText(capacity: 0) },
        ahead: ((Int) -> Void)? = nil,
        _ body: (inout JSONText) -> Bool
    ) {
        let chunks = ReportJSONChunks(stream, size: size, window: window)
        DispatchQueue.global(qos: .userInitiated).async { chunks.help(buffer) }
        chunks.run(buffer, ahead: ahead, body)
    }

    /// The calling thread's loop: hands out every written chunk that is next in order, else writes
    /// the next chunk, else waits for the helper's.
    private func run(_ buffer: @Sendable () -> JSONText, ahead: ((Int) -> Void)?, _ body: (inout JSONText) -> Bool) {
        defer {
            state.withLock { $0.isStopped = true }
            helperChanged.signal()
        }
        while true {
            enum Step {
                case deliver(JSONText, ahead: Int)
                case write(Chunk, JSONText?)
                case wait
                case done
            }
            let step = state.withLock { state -> Step in
                if let chunk = state.written.removeValue(forKey: state.delivered) {
                    return .deliver(chunk, ahead: state.taken - state.delivered)
                }
                if state.next == nil && state.delivered == state.taken { return .done }
                // The window is full when the helper is still writing the next chunk to hand out.
                if state.taken - state.delivered < window, let chunk = take(&state) {
                    return .write(chunk, state.spare.popLast())
                }
                return .wait
            }
            switch step {
            case .deliver(var chunk, let taken):
                ahead?(taken)
                let keeps = body(&chunk)
                state.withLock { state in
                    state.delivered += 1
                    // A buffer the body left (its bytes not taken) is written into again.
                    if chunk.count > 0, state.spare.count < window {
                        chunk.removeAll()
                        state.spare.append(chunk)
                    }
                    if !keeps { state.isStopped = true }
                }
                helperChanged.signal()
                if !keeps { return }
            case .write(let chunk, let reused):
                var text = reused ?? buffer()
                write(chunk, into: &text)
            case .wait:
                changed.wait()
            case .done:
                return
            }
        }
    }

    /// The helper's loop: writes the next chunk while fewer than `window` wait to be handed out.
    private func help(_ buffer: @Sendable () -> JSONText) {
        while true {
            enum Step {
                case write(Chunk, JSONText?)
                case wait
                case done
            }
            let step = state.withLock { state -> Step in
                if state.isStopped || state.next == nil { return .done }
                guard state.taken - state.delivered < window else { return .wait }
                guard let chunk = take(&state) else { return .done }
                return .write(chunk, state.spare.popLast())
            }
            switch step {
            case .write(let chunk, let reused):
                var text = reused ?? buffer()
                write(chunk, into: &text)
                changed.signal()
            case .wait:
                helperChanged.wait()
            case .done:
                return
            }
        }
    }

    /// A chunk to write: its number, where it starts (nil: the text's beginning) and where it ends
    /// (nil: the text's end).
    private struct Chunk {
        var number: Int
        var start: ReportJSONStream.Position?
        var end: ReportJSONStream.Position?
    }

    /// Writes `chunk` into `text` and stores it, with what it says of its table's bytes per row.
    private func write(_ chunk: Chunk, into text: inout JSONText) {
        var part = stream.part(from: chunk.start, to: chunk.end)
        let start = part.position
        part.write(into: &text, upTo: .max)
        let end = part.position
        state.withLock { state in
            if start.table == end.table, start.table < state.tableBytes.count, end.row > max(start.row, 0) {
                state.tableBytes[start.table] += text.count
                state.tableRows[start.table] += end.row - max(start.row, 0)
            }
            state.written[chunk.number] = text
        }
    }

    /// The next chunk to write and its number, from `state.next`: whole tables while they fit the
    /// size (by their rows' measured or estimated bytes), then as many rows of the next as fit; nil
    /// when every chunk is taken.
    private func take(_ state: inout State) -> Chunk? {
        guard let start = state.next else { return nil }
        let tables = stream.tables
        // The first chunk holds the report's header too (only the header, when it fills the size).
        var budget = start.table == 0 && start.row < 0 ? size - stream.headSize : size
        var position = start
        var end: ReportJSONStream.Position?
        while position.table < tables.count {
            let table = tables[position.table]
            let first = max(position.row, 0)
            let rowBytes =
                state.tableRows[position.table] > 0
                ? max(state.tableBytes[position.table] / state.tableRows[position.table], 1)
                : max(table.columns.count * 32, 1)
            let rows = table.count - first
            // The table's `,"name":[` when the chunk opens it.
            if position.row < 0 { budget -= table.name.utf8.count + 4 }
            if rows * rowBytes < budget {
                budget -= rows * rowBytes + 1
                position = ReportJSONStream.Position(table: position.table + 1, row: -1)
                continue
            }
            // At least one row, so that every chunk moves on, unless the size is spent on what comes
            // before them (the header, tables passed over, the table's opening): the chunk holds that.
            let taken = budget <= 0 ? 0 : (budget + rowBytes - 1) / rowBytes
            end = ReportJSONStream.Position(table: position.table, row: first + taken)
            if first + taken >= table.count {
                // The table's last rows: the chunk ends before its `]`.
                end = ReportJSONStream.Position(table: position.table, row: table.count)
            }
            break
        }
        state.next = end
        defer { state.taken += 1 }
        return Chunk(number: state.taken, start: start.row < 0 && start.table == 0 ? nil : start, end: end)
    }
}
