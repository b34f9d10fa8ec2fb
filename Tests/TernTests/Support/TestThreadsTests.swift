import Foundation
import Testing

/// ``TestThreads`` holds no test back behind one that blocks, and every suite runs on it.
@Suite(.onTestThreads) struct TestThreadsTests {
    /// Four child tasks block their threads until a fifth has run: on a pool of a thread per
    /// core they would wait for it forever (the semaphores give up after 20 s).
    @Test func aTaskThatBlocksHoldsNoOtherBack() async {
        let (blocked, released) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    blocked.signal()
                    return released.wait(timeout: .now() + 20) == .success
                }
            }
            group.addTask {
                for _ in 0..<4 { guard blocked.wait(timeout: .now() + 20) == .success else { return false } }
                for _ in 0..<4 { released.signal() }
                return true
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes == Array(repeating: true, count: 5))
    }

    /// Each suite at the top of a file names the trait; a nested suite has its parent's. The
    /// tutorial's suite is as a reader writes it (its tests block nothing).
    @Test func everySuiteRunsOnTestThreads() throws {
        let tests = SnippetTests.root.appendingPathComponent("Tests")
        let files = FileManager.default.enumerator(atPath: tests.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        var suites = 0
        for file in files {
            let source = try String(contentsOf: tests.appendingPathComponent(file), encoding: .utf8)
            let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
            for line in lines where line.hasPrefix("@Suite") {
                suites += 1
                #expect(line.contains(".onTestThreads"), "\(file): \(line)")
            }
            if source.contains("@Test"), !file.hasSuffix("TernSnippets/TutorialCode.swift") {
                #expect(lines.contains { $0.hasPrefix("@Suite") }, "\(file) has tests outside a suite")
            }
            // A test's own unstructured tasks too (the documents' code stays as a reader writes it).
            if !file.hasPrefix("TernSnippets/"), !file.hasSuffix("Support/TestThreadsTests.swift") {
                for line in lines where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//")
                    && line.contains(#/(^|[^\w.])Task \{|Task\.detached/#) {
                    Issue.record("\(file): \(line.trimmingCharacters(in: .whitespaces)): make it with Task.onTestThreads")
                }
            }
        }
        #expect(suites > 90)
    }

    /// A plain `Task {}` would run on the concurrency pool, whatever the test's preference.
    @Test func anUnstructuredTaskOfATestRunsOnTestThreads() async {
        #expect(await Task.onTestThreads { TestThreads.isCurrent }.value)
        #expect(await Task { TestThreads.isCurrent }.value == false)
    }
}
