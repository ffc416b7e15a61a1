import Testing
@testable import TodayCore
import TodayProtocol

/// Results and failure reasons travel as enums and are written as SPEC
/// section 4's text; what is written reads back as the same value.
@Suite struct UpdateResultTests {
    @Test(arguments: [
        FailureReason.timeout, .memoryLimit, .tooLarge, .noProvider, .noSandbox, .reported, .exit(3), .exit(-1), .signal(11),
        .badOutput("'result' must be new-data, no-data or failed, not 'x'"), .storage("disk full"), .other("a reason of another version"),
    ])
    func everyReasonReadsBackFromItsText(_ reason: FailureReason) {
        #expect(FailureReason(reason.description) == reason, "\(reason)")
    }

    @Test func theTextIsSpecs() {
        #expect(FailureReason.memoryLimit.description == "memory-limit")
        #expect(FailureReason.exit(3).description == "exit 3")
        #expect(FailureReason.badOutput("x").description == "bad-output: x")
        #expect(UpdateResult.newData.rawValue == "new-data" && UpdateResult.noData.rawValue == "no-data" && UpdateResult.failed.rawValue == "failed")
        // A record written before a reason existed keeps its text.
        #expect(FailureReason("exit x") == .other("exit x"))
    }

    @Test func aRecordKeepsItsResultAndReason() {
        var record = WidgetRecord()
        record.lastResult = .failed
        record.lastFailure = .signal(9)
        let back = WidgetRecord(plist: record.plist)
        #expect(back.lastResult == .failed && back.lastFailure == .signal(9))
        #expect(WidgetRecord(plist: WidgetRecord().plist).lastResult == nil)
    }
}
