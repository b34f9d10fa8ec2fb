import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

/// The transports' per-origin cap as a value: which exchanges run, which wait, in what order.
@Suite(.onTestThreads) struct HostAdmissionTests {
    final class Job {}

    @Test func pastTheLimitExchangesWaitAndRunInTheOrderTheyCame() {
        var admission = HostAdmission<Job>(limit: 2)
        let jobs = (0..<5).map { _ in Job() }
        let check1 = jobs.map { admission.admit($0, origin: "a:80") } == [true, true, false, false, false]
        #expect(check1)
        let check2 = admission.release(origin: "a:80") === jobs[2]
        #expect(check2)
        let check3 = admission.release(origin: "a:80") === jobs[3]
        #expect(check3)
        #expect(admission.runningCount(to: "a:80") == 2)
        let check4 = admission.release(origin: "a:80") === jobs[4]
        #expect(check4)
        let check5 = admission.release(origin: "a:80") == nil
        #expect(check5)
        let check6 = admission.release(origin: "a:80") == nil
        #expect(check6)
        #expect(admission.runningCount(to: "a:80") == 0)
    }

    /// An origin is full from the exchange that reaches the limit until one ends with none
    /// waiting to take its place.
    @Test func anOriginIsFullWhileItsLimitRun() {
        var admission = HostAdmission<Job>(limit: 2)
        #expect(admission.admit(Job(), origin: "a:80") && admission.fullOrigins.isEmpty)
        #expect(admission.admit(Job(), origin: "a:80") && admission.fullOrigins == ["a:80"])
        #expect(!admission.admit(Job(), origin: "a:80") && admission.admit(Job(), origin: "b:80"))
        #expect(admission.fullOrigins == ["a:80"])
        #expect(admission.release(origin: "a:80") != nil && admission.fullOrigins == ["a:80"])   // the waiting one took its place
        #expect(admission.release(origin: "a:80") == nil && admission.fullOrigins.isEmpty)
        #expect(admission.admit(Job(), origin: "a:80") && admission.fullOrigins == ["a:80"])
        #expect(admission.admit(Job(), origin: nil) && admission.fullOrigins == ["a:80"])
    }

    /// Past the total, exchanges to any counted origin wait; a place freed goes to the origin's
    /// own line first, then to the first that waited for the total at another origin that has
    /// room; never more than the total run, and one cancelled while waiting is passed over.
    @Test func pastTheTotalExchangesWaitAndRunInTheOrderTheyCame() {
        var admission = HostAdmission<Job>(limit: 2, totalLimit: 3)
        let (a1, a2, a3, b1, b2, c1, d1) = (Job(), Job(), Job(), Job(), Job(), Job(), Job())
        let ran = [admission.admit(a1, origin: "a:80"), admission.admit(a2, origin: "a:80"), admission.admit(b1, origin: "b:80")]
        #expect(ran == [true, true, true] && admission.isFull)
        let waited = [admission.admit(b2, origin: "b:80"), admission.admit(d1, origin: "d:80"), admission.admit(c1, origin: "c:80"),
                      admission.admit(a3, origin: "a:80")]
        #expect(waited == [false, false, false, false])
        let https = admission.admit(Job(), origin: nil)   // HTTPS is not counted
        let withdrawn = admission.withdraw(d1, origin: "d:80")
        #expect(https && withdrawn)
        let first = admission.release(origin: "a:80")
        #expect(first === a3)                            // a's own line first
        let second = admission.release(origin: "a:80")
        #expect(second === b2)                           // then the first that waited for the total
        let third = admission.release(origin: "b:80")
        #expect(third === c1)                            // d1 left the line
        #expect(admission.isFull)
        let none = admission.release(origin: "a:80")
        #expect(none == nil && !admission.isFull)
        let another = admission.admit(Job(), origin: "e:80")
        #expect(another && admission.isFull)
    }

    /// Only an exchange in its origin's line waits: not one running, nor one withdrawn.
    @Test func anExchangeWaitsWhileItIsInItsOriginsLine() {
        var admission = HostAdmission<Job>(limit: 1)
        let (running, waiting, https) = (Job(), Job(), Job())
        #expect(admission.admit(running, origin: "a:80") && !admission.admit(waiting, origin: "a:80") && admission.admit(https, origin: nil))
        #expect(!admission.isWaiting(running, origin: "a:80") && admission.isWaiting(waiting, origin: "a:80"))
        #expect(!admission.isWaiting(https, origin: nil) && !admission.isWaiting(waiting, origin: "b:80"))
        let next = admission.release(origin: "a:80")
        #expect(next === waiting && !admission.isWaiting(waiting, origin: "a:80"))
    }

    @Test func originsAreCountedApartAndHTTPSIsNotCounted() {
        var admission = HostAdmission<Job>(limit: 1)
        let check7 = admission.admit(Job(), origin: "a:80")
        #expect(check7)
        let check8 = admission.admit(Job(), origin: "b:80")
        #expect(check8)
        let check9 = !admission.admit(Job(), origin: "a:80")
        #expect(check9)
        let check10 = (0..<100).allSatisfy { _ in admission.admit(Job(), origin: nil) }
        #expect(check10)
        let check11 = admission.release(origin: nil) == nil
        #expect(check11)
    }

    @Test func aWaitingExchangeCancelledLeavesTheLineAndARunningOneDoesNot() {
        var admission = HostAdmission<Job>(limit: 1)
        let (running, first, second) = (Job(), Job(), Job())
        let check12 = admission.admit(running, origin: "a:80")
        #expect(check12)
        let check13 = !admission.admit(first, origin: "a:80")
        #expect(check13)
        let check14 = !admission.admit(second, origin: "a:80")
        #expect(check14)
        let check15 = !admission.withdraw(running, origin: "a:80")
        #expect(check15)
        let check16 = admission.withdraw(first, origin: "a:80")
        #expect(check16)
        let check17 = !admission.withdraw(first, origin: "a:80")
        #expect(check17)
        // A newcomer never jumps a line that is waiting.
        let check18 = admission.release(origin: "a:80") === second
        #expect(check18)
        let check19 = !admission.admit(Job(), origin: "a:80")
        #expect(check19)
    }

    @Test func onlyPlainHTTPOriginsAreCountedWithTheirPorts() {
        #expect(URL(string: "http://Shop.Example/a")?.admissionOrigin == "shop.example:80")
        #expect(URL(string: "http://127.0.0.1:8080/")?.admissionOrigin == "127.0.0.1:8080")
        #expect(URL(string: "https://shop.example/")?.admissionOrigin == nil)
    }
}
