import Foundation
import Testing
import Tern
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An upload whose request carries `Expect: 100-continue` of the user's own (in its options or
/// set by a signing delegate), answered `100 Continue` and then `200` with the body echoed, as
/// RFC 9110 has it. Over libcurl it succeeds (Tern drops the field, so the body goes at once
/// and the server's 100 is passed over). Over FoundationNetworking's URLSession the field goes
/// out, and the upload fails: `transportFailed`, "failed after its response began (status
/// 100, 0 bytes of the body received)", URLError -1011. FoundationNetworking hands the 100 on
/// as the response (`SessionExchanges.urlSession(_:dataTask:didReceive:completionHandler:)`
/// passes it to the receiver, `ResponseHeadCheck` refusing only a 101) and then fails the task.
/// Every upload a server accepts with 100 fails.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ExpectContinueBreakTests {
    @Test(arguments: ExpectContinueAttackTests.Kind.allCases, ExpectContinueAttackTests.Setter.allCases)
    func anUploadThatAsksForContinueAndGetsItSucceeds(kind: ExpectContinueAttackTests.Kind, setter: ExpectContinueAttackTests.Setter) async throws {
        let server = try ExpectContinueAttackTests.Server { head, _, connection, seen in
            if ExpectContinueAttackTests.Seen(head: head, body: nil).expects { connection.send("HTTP/1.1 100 Continue\r\n\r\n") }
            let body = ExpectContinueAttackTests.readBody(of: head, from: connection)
            seen.append(ExpectContinueAttackTests.Seen(head: head, body: body))
            connection.send(ExpectContinueAttackTests.echo(body ?? Data("short".utf8)))
        }
        let (result, _) = try await ExpectContinueAttackTests.withFile {
            try await ExpectContinueAttackTests.upload(kind, setter: setter, to: server, file: $0)
        }
        #expect(try result.get() == String(decoding: ExpectContinueAttackTests.body, as: UTF8.self))
    }
}
