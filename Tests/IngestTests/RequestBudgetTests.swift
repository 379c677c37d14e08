import Testing

@testable import Ingest

@Suite struct RequestBudgetTests {
    static let large = 100_000  // a body over RequestBudget.smallRequestBytes (64 KiB)

    @Test("lines are charged on top of the body, refused over the limit while others hold bytes, let through alone")
    func lines() {
        let budget = RequestBudget(limit: 1_000_000)
        #expect(budget.charge(300_000, bodyBytes: 300_000))  // one request's body
        #expect(budget.chargeLines(500_000, ownBody: 300_000))
        #expect(budget.heldBytes == 800_000)
        // Another request's lines would cross the limit while the first holds bytes: refused.
        #expect(budget.charge(Self.large, bodyBytes: Self.large))
        #expect(!budget.chargeLines(400_000, ownBody: Self.large))
        #expect(budget.heldBytes == 900_000)
        budget.release(800_000)
        // Alone (only its own body held), a request's lines pass whatever their size.
        #expect(budget.chargeLines(5_000_000, ownBody: Self.large))
        #expect(budget.heldBytes == 5_100_000)
        budget.release(5_100_000)
        #expect(budget.heldBytes == 0)
        #expect(budget.peakBytes == 5_100_000)
    }

    @Test("small requests (SDK single events) may use a quarter more than the limit; large ones stop at it")
    func smallRequestReserve() {
        let budget = RequestBudget(limit: 1_000_000)
        #expect(budget.reserve == 250_000)
        #expect(budget.charge(900_000, bodyBytes: 900_000))
        // A large body that would cross the limit is refused...
        #expect(!budget.charge(Self.large + 1, bodyBytes: Self.large + 1))
        // ...a small one is not, nor its lines, up to the limit plus the reserve.
        let small = RequestBudget.smallRequestBytes
        #expect(budget.charge(small, bodyBytes: small))
        #expect(budget.chargeLines(small, ownBody: small))
        #expect(budget.charge(small, bodyBytes: small))
        var more = 0
        while more < 100, budget.charge(small, bodyBytes: small) { more += 1 }
        #expect(more == 2, "the reserve is bounded too: 250,000 bytes hold 3 + 2 bodies of 64 KiB")
        #expect(!budget.chargeLines(small, ownBody: small))
        #expect(budget.heldBytes == 900_000 + 5 * small)
        // A chunked body is small while what it has so far is: its later chunks are charged as large.
        budget.release(5 * small)
        #expect(budget.charge(1_000, bodyBytes: small))
        #expect(!budget.charge(Self.large, bodyBytes: small + Self.large))
        #expect(budget.peakBytes <= budget.limit + budget.reserve)
    }

    @Test("a body reserved from its Content-Length is charged ahead; its chunks are not charged again")
    func reservedBody() {
        let core = ServerCore(handler: UnitTests.UnusedHandler(), maxBufferedBodyBytes: 16)
        let state = RequestState(route: "batch", started: .now, limit: 100, context: ())
        #expect(core.chargeBody(12, bodyBytes: 12))
        state.charged = 12
        let six = [UInt8](repeating: 1, count: 6)
        six.withUnsafeBytes { #expect(state.receive($0, core: core) == .keep) }
        six.withUnsafeBytes { #expect(state.receive($0, core: core) == .keep) }
        #expect(core.budget.heldBytes == 12 && state.charged == 12 && state.body.count == 12)
        // Past the reservation, chunks are charged as they come (this small body may use the
        // reserve, a quarter of 16 bytes), and dropped when they do not fit.
        [UInt8](repeating: 1, count: 4).withUnsafeBytes { #expect(state.receive($0, core: core) == .keep) }
        #expect(core.budget.heldBytes == 16 && state.charged == 16)
        six.withUnsafeBytes { #expect(state.receive($0, core: core) == .discard) }
        #expect(state.isOverBudget && core.budget.heldBytes == 0 && state.charged == 0)
    }

    @Test("a body declared over 64 KiB whose reservation was refused does not use the reserve for its first chunks")
    func declaredLargeBodyHasNoReserve() {
        let core = ServerCore(handler: UnitTests.UnusedHandler(), maxBufferedBodyBytes: 16)
        #expect(core.chargeBody(16, bodyBytes: 16))  // the budget is full; its reserve (4 bytes) is free
        let four = [UInt8](repeating: 1, count: 4)
        // A large batch (declared 100,000 bytes, more than the 16 the budget has): its first chunk
        // took the reserve, though the body is known to be large from its Content-Length.
        let large = RequestState(route: "batch", started: .now, limit: 200_000, context: ())
        large.declaredLength = Self.large
        four.withUnsafeBytes { #expect(large.receive($0, core: core) == .discard) }
        #expect(large.isOverBudget && core.budget.heldBytes == 16)
        // A small body declared small still may.
        let small = RequestState(route: "event", started: .now, limit: 200_000, context: ())
        small.declaredLength = 4
        four.withUnsafeBytes { #expect(small.receive($0, core: core) == .keep) }
        #expect(core.budget.heldBytes == 20)
    }

    @Test("a compressed body is small or not by its decoded size: a gzip batch's lines do not use the reserve")
    func compressedBodyDecodedSize() {
        let budget = RequestBudget(limit: 1_000_000)
        #expect(budget.charge(900_000, bodyBytes: 900_000))
        #expect(budget.charge(600, bodyBytes: 600))  // 600 bytes of gzip...
        // ...that decode to 100,000 bytes: their 120,000 bytes of lines would cross the limit.
        #expect(!budget.chargeLines(120_000, ownBody: 600, decodedBody: Self.large))
        // An SDK event, compressed or not, still may use the reserve.
        #expect(budget.chargeLines(2_000, ownBody: 600, decodedBody: 1_800))
        #expect(budget.heldBytes == 902_600)
    }
}
