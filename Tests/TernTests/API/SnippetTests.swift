import Foundation
import Testing

/// Every Swift snippet of the README, the DocC articles and the public symbols' documentation
/// must appear, line for line and in order, in a file of the `TernSnippets` target, so that what
/// users copy is code that compiles today, and compiles in their module: that target has no
/// `package` access, so a snippet that names a declaration users cannot reach does not build.
/// Indentation is ignored, and so are the lines that wrap statements into a function there
/// (`static func … {`, `}`, `_ =`, `_ = …`, `return …`); a snippet's `import` lines (and the
/// `#if canImport` guard around them) are left out. A `// Package.swift` fragment is checked
/// against the manifest instead.
@Suite(.onTestThreads) struct SnippetTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()   // API
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The documents whose snippets are checked.
    static var documents: [URL] {
        let articles = ["Sources/Tern/Tern.docc", "Sources/TernTesting/TernTesting.docc"].flatMap { catalog in
            ((try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(catalog).path)) ?? [])
                .filter { $0.hasSuffix(".md") }.sorted().map { root.appendingPathComponent("\(catalog)/\($0)") }
        }
        return [root.appendingPathComponent("README.md")] + articles + symbolDocuments
    }

    /// The library's Swift files whose documentation comments show code: a symbol's page in
    /// the documentation shows it as an article does.
    static var symbolDocuments: [URL] {
        let sources = root.appendingPathComponent("Sources")
        let paths = FileManager.default.enumerator(atPath: sources.path)?.compactMap { $0 as? String } ?? []
        return paths.filter { $0.hasSuffix(".swift") }.sorted().map { sources.appendingPathComponent($0) }.filter { file in
            (try? String(contentsOf: file, encoding: .utf8))?.contains("/// ```swift") == true
        }
    }

    /// A document as Markdown: a Swift file's documentation comments of public declarations,
    /// each line in its place (the rest blank, so that a block's line number is the file's), or
    /// an article as it is. A `package` symbol's comment is for the package's own code.
    static func markdown(of document: URL) throws -> String {
        let text = try String(contentsOf: document, encoding: .utf8)
        guard document.pathExtension == "swift" else { return text }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { String($0.drop { $0 == " " }) }
        var comment: [Int] = []
        for index in lines.indices {
            if lines[index].hasPrefix("///") {
                let body = lines[index].dropFirst(3)
                lines[index] = String(body.first == " " ? body.dropFirst() : body)
                comment.append(index)
            } else if isAttribute(lines[index]) && !comment.isEmpty {
                lines[index] = ""   // between a comment and its declaration
            } else {
                let documentsPublic = lines[index].hasPrefix("public ") || lines[index].hasPrefix("open ")
                    || lines[index].contains(" public ") || lines[index].contains(" open ")
                if !documentsPublic { comment.forEach { lines[$0] = "" } }
                comment = []
                lines[index] = ""
            }
        }
        return lines.joined(separator: "\n")
    }

    /// Whether a line holds attributes only (`@discardableResult`, `@available(macOS 15, *)`).
    static func isAttribute(_ line: String) -> Bool {
        var depth = 0
        let outside = line.filter { character in
            if character == "(" { depth += 1 } else if character == ")" { depth -= 1 }
            return depth == 0 && character != ")"
        }
        return line.hasPrefix("@") && outside.split(separator: " ").allSatisfy { $0.hasPrefix("@") }
    }

    /// Every Swift file of the snippets' target, by name, as its trimmed, non-empty lines.
    static let snippetFiles: [String: [String]] = {
        let base = root.appendingPathComponent("Tests/TernSnippets")
        let paths = FileManager.default.enumerator(atPath: base.path)?.compactMap { $0 as? String } ?? []
        return Dictionary(uniqueKeysWithValues: paths.filter { $0.hasSuffix(".swift") }.map { path in
            (path, lines(of: (try? String(contentsOf: base.appendingPathComponent(path), encoding: .utf8)) ?? ""))
        })
    }()

    static var compiled: [[String]] { Array(snippetFiles.values) }

    static func lines(of text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    /// The fenced Swift blocks of a Markdown text, each with the line it starts on.
    static func swiftBlocks(in markdown: String) -> [(line: Int, lines: [String])] {
        var blocks: [(Int, [String])] = []
        var current: (Int, [String])?
        for (number, line) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if var block = current {
                if trimmed == "```" {
                    blocks.append(block)
                    current = nil
                } else if !trimmed.isEmpty {
                    block.1.append(trimmed)
                    current = block
                }
            } else if trimmed == "```swift" {
                current = (number + 1, [])
            }
        }
        return blocks
    }

    /// Whether `block` appears in `file`, in order, with only wrapping lines between its lines.
    static func contains(_ file: [String], _ block: [String]) -> Bool {
        let block = withoutImports(block)
        guard let first = block.first else { return true }
        for start in file.indices where file[start] == first {
            var line = start, wanted = 0
            while wanted < block.count, line < file.count {
                if file[line] == block[wanted] {
                    wanted += 1
                } else if !isWrapping(file[line]) {
                    break
                }
                line += 1
            }
            if wanted == block.count { return true }
        }
        return false
    }

    /// `block` without its `import` lines, nor the `#if canImport(FoundationNetworking)` guard
    /// around them at its top: the test files have their own.
    static func withoutImports(_ block: [String]) -> [String] {
        let body = block.drop { $0.hasPrefix("import ") || $0.hasPrefix("#if canImport(") || $0 == "#endif" }
        return body.filter { !$0.hasPrefix("import ") }
    }

    /// A line that only wraps snippet statements into a compiled function.
    static func isWrapping(_ line: String) -> Bool {
        line == "}" || line == "_ =" || line.hasPrefix("_ = ") || line.hasPrefix("return ")
            || (line.hasPrefix("static func ") && line.hasSuffix("{"))
    }

    /// A manifest fragment names the package's real product.
    static func isManifestFragment(_ block: [String]) -> Bool {
        block.first == "// Package.swift" || block.first?.hasPrefix(".package(") == true
    }

    /// The snippets' target sees what a user's module sees: the manifest denies it the
    /// package's `package` declarations (SwiftPM then gives it no `-package-name`), and none of
    /// its files imports a module `@testable`, which would open them again, internals too.
    @Test func theSnippetsTargetHasNoPackageAccess() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(manifest.contains(#".testTarget(name: "TernSnippets", dependencies: ["Tern", "TernTesting"], packageAccess: false)"#))
        #expect(Self.compiled.count >= 6, "is the path to the snippets' target right?")
        for (name, lines) in Self.snippetFiles {
            #expect(!lines.contains { $0.hasPrefix("@testable") || $0.hasPrefix("@_spi") }, "\(name) imports what a user cannot")
        }
    }

    @Test func onlyPublicDeclarationsShowTheirExamples() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("Snippets-\(UUID().uuidString).swift")
        try """
            /// ```swift
            /// shown()
            /// ```
            @discardableResult
            @available(macOS 15.0, *)
            @inlinable public func shown() -> Int { 1 }
            /// ```swift
            /// hidden()
            /// ```
            package func hidden() {}
            """.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let blocks = Self.swiftBlocks(in: try Self.markdown(of: file))
        #expect(blocks.map(\.lines) == [["shown()"]])
        #expect(blocks.first?.line == 1)
    }

    @Test func theDocumentsHaveSnippets() {
        let count = Self.documents.reduce(0) { total, url in
            total + Self.swiftBlocks(in: (try? Self.markdown(of: url)) ?? "").count
        }
        #expect(count > 100, "found only \(count) snippets: is the path to the documents right?")
    }

    @Test(arguments: documents)
    func everySnippetIsCompiledCode(document: URL) throws {
        let markdown = try Self.markdown(of: document)
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        for block in Self.swiftBlocks(in: markdown) {
            if Self.isManifestFragment(block.lines) {
                let product = block.lines.first { $0.hasPrefix(".product(name: ") }
                #expect(product == #".product(name: "Tern", package: "Tern"),"# && manifest.contains(#".library(name: "Tern""#),
                        "\(document.lastPathComponent):\(block.line): the fragment names no product the manifest has")
            } else if !Self.compiled.contains(where: { Self.contains($0, block.lines) }) {
                Issue.record("\(document.lastPathComponent):\(block.line): this snippet is in no file of Tests/TernSnippets:\n\(block.lines.joined(separator: "\n"))")
            }
        }
    }

    /// The code files of the DocC tutorial, each shown whole in one of its steps.
    static var tutorialFiles: [URL] {
        let folder = root.appendingPathComponent("Sources/Tern/Tern.docc/Resources")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".swift") }.sorted().map { folder.appendingPathComponent($0) }
    }

    @Test func theTutorialHasItsFiles() {
        #expect(Self.tutorialFiles.count >= 6, "\(Self.tutorialFiles): is the path to the tutorial's files right?")
    }

    @Test(arguments: tutorialFiles)
    func everyTutorialFileIsCompiledCode(file: URL) throws {
        let lines = Self.lines(of: try String(contentsOf: file, encoding: .utf8))
        let compiled = Self.compiled.contains { Self.contains($0, lines) }
        #expect(compiled, "\(file.lastPathComponent) is in no file of Tests/TernSnippets")
    }
}
