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
