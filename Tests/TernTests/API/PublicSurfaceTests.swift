import Foundation
import Testing

/// The public surface, kept in view: each module's `PUBLIC.md` lists its public declarations,
/// generated from the sources, and a test fails when it is out of date, so that what becomes
/// public shows in review. Every public declaration has a `///` comment.
///
/// After a deliberate change: `TERN_WRITE_PUBLIC=1 swift test --filter PublicSurfaceTests`.
@Suite(.onTestThreads) struct PublicSurfaceTests {
    static let modules = ["TernCore", "TernTransport", "Tern", "TernTesting"]

    /// A public declaration: where it is, its signature, and whether a `///` comment precedes it.
    struct Declaration {
        let file: String
        let line: Int
        let signature: String
        let isDocumented: Bool
    }

    /// The public and open declarations of a module, file by file, in source order.
    static func declarations(inModule module: String) -> [Declaration] {
        let folder = SnippetTests.root.appendingPathComponent("Sources/\(module)")
        let paths = (FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String } ?? [])
            .filter { $0.hasSuffix(".swift") && !$0.contains(".docc/") }.sorted()
        var found: [Declaration] = []
        for path in paths {
            let text = (try? String(contentsOf: folder.appendingPathComponent(path), encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            for (index, line) in lines.enumerated() where isPublicDeclaration(line) {
                var above = index - 1
                while above >= 0, lines[above].hasPrefix("@") { above -= 1 }
                let documented = above >= 0 && lines[above].hasPrefix("///")
                found.append(Declaration(file: path, line: index + 1, signature: signature(from: lines, at: index), isDocumented: documented))
            }
        }
        return found
    }

    /// Whether `line` declares something public or open (an extension is not a declaration).
    static func isPublicDeclaration(_ line: String) -> Bool {
        var rest = Substring(line)
        while rest.hasPrefix("@"), let space = rest.firstIndex(of: " ") {   // @inlinable, @discardableResult, …
            rest = rest[rest.index(after: space)...]
        }
        guard rest.hasPrefix("public ") || rest.hasPrefix("open ") else { return false }
        return !rest.contains("extension ") && !rest.hasPrefix("public import")
    }

    /// The declaration's signature: its lines until the parentheses close, without a body or a
    /// default value.
    static func signature(from lines: [String], at start: Int) -> String {
        var text = "", depth = 0, index = start
        repeat {
            let line = lines[index]
            text += (text.isEmpty || text.hasSuffix("(") ? "" : " ") + line
            depth += line.filter { $0 == "(" }.count - line.filter { $0 == ")" }.count
            index += 1
        } while depth > 0 && index < lines.count
        for end in [" {", " = "] {
            if let range = text.range(of: end) { text = String(text[..<range.lowerBound]) }
        }
        return text
    }

    /// The module's `PUBLIC.md`, as the sources make it today.
    static func listing(of module: String) -> String {
        let all = declarations(inModule: module)
        var text = "# The public surface of \(module)\n\n"
        text += "\(all.count) public declarations, generated from the sources by `PublicSurfaceTests`: after a deliberate\n"
        text += "change, `TERN_WRITE_PUBLIC=1 swift test --filter PublicSurfaceTests` writes this file again.\n"
        for file in Set(all.map(\.file)).sorted() {
            text += "\n## \(file)\n\n```\n"
            for declaration in all where declaration.file == file { text += declaration.signature + "\n" }
            text += "```\n"
        }
        return text
    }

    @Test(arguments: modules)
    func everyPublicDeclarationIsDocumented(module: String) {
        let all = Self.declarations(inModule: module)
        #expect(all.count > 20, "\(module): is the path to its sources right?")
        for declaration in all where !declaration.isDocumented {
            Issue.record("Sources/\(module)/\(declaration.file):\(declaration.line): \(declaration.signature) has no /// comment")
        }
    }

    @Test(arguments: modules)
    func thePublicListIsUpToDate(module: String) throws {
        let file = SnippetTests.root.appendingPathComponent("Sources/\(module)/PUBLIC.md")
        let listing = Self.listing(of: module)
        if ProcessInfo.processInfo.environment["TERN_WRITE_PUBLIC"] == "1" {
            try listing.write(to: file, atomically: true, encoding: .utf8)
        }
        let committed = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        let upToDate = committed == listing
        #expect(upToDate, "Sources/\(module)/PUBLIC.md is out of date: TERN_WRITE_PUBLIC=1 swift test --filter PublicSurfaceTests")
    }
}
