import Foundation
import Testing
@testable import Tern
@testable import TernTransport

/// Where the pipeline handles an exchange's end, which a transport with a thread of its own
/// reports there: the decision is the pipeline's alone, from what it knows of the request and
/// what the transport says of the thread (its transport tests check what it says).
@Suite(.onTestThreads) struct EndPlacementTests {
    static func elsewhere(_ caller: TransportCaller, callsAppCode: Bool = false, answered: Bool = true, parses: Bool = false,
                          sentFromJob: Bool = false) -> Bool {
        EndPlacement.handlesElsewhere(caller: caller, callsAppCode: callsAppCode, answered: answered, parses: parses, sentFromJob: sentFromJob)
    }

    @Test func offATransportsThreadTheEndIsHandledWhereItIsReported() {
        #expect(!Self.elsewhere(.elsewhere, callsAppCode: true, parses: true))
    }

    /// The app's code may wait for a request only that thread can carry.
    @Test func theAppsCodeNeverRunsOnTheTransportsThread() {
        for caller in [TransportCaller.loop(alone: true), .loop(alone: false), .job] {
            for answered in [false, true] {
                #expect(Self.elsewhere(caller, callsAppCode: true, answered: answered), "\(caller), answered: \(answered)")
            }
        }
    }

    @Test func anAnswerThatRanAloneIsHandledThereSparingAHop() {
        #expect(!Self.elsewhere(.loop(alone: true), parses: true))
        #expect(!Self.elsewhere(.loop(alone: true), parses: false))
    }

    /// Work that grows with the body would hold up the others' bytes.
    @Test func anAnswerReadThroughWhileOthersRunIsHandledElsewhere() {
        #expect(Self.elsewhere(.loop(alone: false), parses: true))
        #expect(Self.elsewhere(.loop(alone: false), parses: true, sentFromJob: true))
    }

    /// A task on the thread resumes there anyway: a hop away and back costs more than the end.
    @Test func whatAJobSentIsHandledThereUnlessItIsReadThrough() {
        #expect(!Self.elsewhere(.loop(alone: false), parses: false, sentFromJob: true))
        #expect(Self.elsewhere(.loop(alone: false), parses: false, sentFromJob: false))
    }

    /// A failure (a cancel, a refusal, a lost connection) has no body to read.
    @Test func aFailureIsHandledWhereItIsReported() {
        #expect(!Self.elsewhere(.loop(alone: false), answered: false, parses: true))
    }

    /// Which value types read the body through when the request settles.
    @Test func theValueTypeSaysWhetherSettlingReadsTheBody() {
        #expect(ResponseDecoding<Data>.data.parses == false)
        #expect(ResponseDecoding<String>.text.parses == true)
        #expect(ResponseDecoding<[Int]>.decodable.parses == true)
        #expect(ResponseDecoding<Void>.ignored.parses == false)
        #expect(ResponseDecoding<Response>.response.parses == false)
    }
}
