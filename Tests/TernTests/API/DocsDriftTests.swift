import Foundation
import Testing

/// What the docs list must not fall behind the code: a check per list, failing when a case or a
/// type is added and the docs are not.
@Suite(.onTestThreads) struct DocsDriftTests {
    /// The cases of `APIError`, read from its declaration.
    static var apiErrorCases: [String] {
        let source = (try? String(contentsOf: SnippetTests.root.appendingPathComponent("Sources/TernCore/Errors/APIError.swift"), encoding: .utf8)) ?? ""
        let declaration = source.components(separatedBy: "public enum APIError").dropFirst().first?.components(separatedBy: "\n}").first ?? ""
        return declaration.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("    case ") else { return nil }
            return line.dropFirst("    case ".count).prefix { $0.isLetter || $0.isNumber }.description
        }
    }

    @Test func apiErrorHasItsCases() {
        #expect(Self.apiErrorCases.count >= 12, "\(Self.apiErrorCases): is the path to APIError.swift right?")
    }

    @Test func everyAPIErrorCaseIsInTheErrorTable() throws {
        let text = try String(contentsOf: SnippetTests.root.appendingPathComponent("Sources/Tern/Tern.docc/ResponsesAndErrors.md"), encoding: .utf8)
        for name in Self.apiErrorCases {
            #expect(text.contains("| `.\(name)` |"), "ResponsesAndErrors.md has no row for APIError.\(name)")
        }
    }

    @Test func theReadmeNamesEveryAPIErrorCase() throws {
        let text = try String(contentsOf: SnippetTests.root.appendingPathComponent("README.md"), encoding: .utf8)
        for name in Self.apiErrorCases {
            #expect(text.contains("`.\(name)`"), "README.md does not name APIError.\(name)")
        }
    }

    @Test(arguments: ["Tern", "TernCore", "TernTransport"])
    func everySourceFolderIsInTheLayoutTable(module: String) throws {
        let layout = try String(contentsOf: SnippetTests.root.appendingPathComponent("Sources/Tern/Tern.docc/SourceLayout.md"), encoding: .utf8)
        let sources = SnippetTests.root.appendingPathComponent("Sources/\(module)")
        let folders = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { name in
            var isFolder: ObjCBool = false
            return !name.hasSuffix(".docc") && FileManager.default.fileExists(atPath: sources.appendingPathComponent(name).path, isDirectory: &isFolder) && isFolder.boolValue
        }
        #expect(!folders.isEmpty, "\(folders): is the path to Sources/\(module) right?")
        for folder in folders {
            let hasRow = layout.contains("| `\(folder)/` |")
            #expect(hasRow, "the source layout article has no row for \(module)/\(folder)/")
        }
    }

    /// The path of one request names the types and methods that carry it: each must still be
    /// declared, so that the drawing cannot outlive the code it draws.
    @Test func thePathOfOneRequestNamesWhatTheCodeDeclares() throws {
        let layout = try String(contentsOf: SnippetTests.root.appendingPathComponent("Sources/Tern/Tern.docc/SourceLayout.md"), encoding: .utf8)
        let path = try #require(layout.components(separatedBy: "## The path of one request").last?.components(separatedBy: "## Folders").first)
        let sources = SnippetTests.root.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(atPath: sources.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        let code = files.map { (try? String(contentsOf: sources.appendingPathComponent($0), encoding: .utf8)) ?? "" }.joined(separator: "\n")
        // `Type.member` and CamelCase types of two words or more.
        let named = try Regex(#"\b([A-Z][a-z]+(?:[A-Z][a-z]*)+)(?:\.([a-z][A-Za-z]*))?"#)
        var checked = 0
        for match in path.matches(of: named) {
            guard let type = match.output[1].substring.map(String.init) else { continue }
            let declared = ["struct", "class", "enum", "protocol", "typealias", "actor"].contains { code.contains("\($0) \(type)") }
            #expect(declared, "the path of one request names \(type), which no source declares")
            if let member = match.output[2].substring.map(String.init) {
                let memberDeclared = ["func \(member)", "var \(member)", "let \(member)", "case \(member)"].contains { code.contains($0) }
                #expect(memberDeclared, "the path of one request names \(type).\(member), which no source declares")
            }
            checked += 1
        }
        #expect(checked > 10, "the path names \(checked) types: is the section still there?")
    }

    /// The public top-level types declared in a module's sources: `public` or `open` at the
    /// start of a line, then the kind and the name.
    static func publicTypes(inModule module: String) -> [String] {
        let folder = SnippetTests.root.appendingPathComponent("Sources/\(module)")
        let paths = FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String } ?? []
        let kinds = ["class ", "struct ", "enum ", "protocol ", "actor ", "typealias "]
        var names: [String] = []
        for path in paths where path.hasSuffix(".swift") {
            let text = (try? String(contentsOf: folder.appendingPathComponent(path), encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") where line.hasPrefix("public ") || line.hasPrefix("open ") {
                var rest = line.drop { $0 != " " }.dropFirst()
                if rest.hasPrefix("final ") { rest = rest.dropFirst("final ".count) }
                guard let kind = kinds.first(where: { rest.hasPrefix($0) }) else { continue }
                names.append(String(rest.dropFirst(kind.count).prefix { $0.isLetter || $0.isNumber || $0 == "_" }))
            }
        }
        return names.sorted()
    }

    @Test(arguments: [(["TernCore", "TernTransport", "Tern"], "Sources/Tern/Tern.docc"), (["TernTesting"], "Sources/TernTesting/TernTesting.docc")])
    func everyPublicTypeIsLinkedFromTheCatalog(modules: [String], catalog: String) throws {
        let folder = SnippetTests.root.appendingPathComponent(catalog)
        let text = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".md") }
            .map { try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8) }.joined()
        let types = modules.flatMap(Self.publicTypes(inModule:))
        #expect(types.count > 8, "\(types): are the paths to \(modules) right?")
        for type in types {
            let linked = text.contains("``\(type)``")
            #expect(linked, "\(catalog) links nowhere to \(type)")
        }
    }
}
