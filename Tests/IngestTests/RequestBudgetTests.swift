import Testing

@testable import Ingest

@Suite struct RequestBudgetTests {
    @Test("lines are charged on top of the body, refused over the limit while others hold bytes, let through alone")
    func lines() {
        let budget = RequestBudget(limit: 100)
        #expect(budget.charge(30))  // one request's body
        #expect(budget.chargeLines(50, ownBody: 30))
        #expect(budget.heldBytes == 80)
        // Another request's lines would cross the limit while the first holds bytes: refused.
        #expect(budget.charge(10))
        #expect(!budget.chargeLines(40, ownBody: 10))
        #expect(budget.heldBytes == 90)
        budget.release(80)
        // Alone (only its own body held), a request's lines pass whatever their size.
        #expect(budget.chargeLines(500, ownBody: 10))
        #expect(budget.heldBytes == 510)
        budget.release(510)
        #expect(budget.heldBytes == 0)
        #expect(budget.peakBytes == 510)
    }

    @Test("a body reserved from its Content-Length is charged ahead; its chunks are not charged again")
    func reservedBody() {
        let core = ServerCore(handler: UnitTests.UnusedHandler(), maxBufferedBodyBytes: 16)
        let state = RequestState(route: "batch", started: .now, limit: 100, context: ())
        #expect(core.chargeBody(12))
        state.charged = 12
        let six = [UInt8](repeating: 1, count: 6)
        six.withUnsafeBytes { #expect(state.receive($0, core: core) == .keep) }
        six.withUnsafeBytes { #expect(state.receive($0, core: core) == .keep) }
        #expect(core.budget.heldBytes == 12 && state.charged == 12 && state.body.count == 12)
        // Past the reservation, chunks are charged as they come, and dropped when they do not fit.
        six.withUnsafeBytes { #expect(state.receive($0, core: core) == .discard) }
        #expect(state.isOverBudget && core.budget.heldBytes == 0 && state.charged == 0)
    }

}
