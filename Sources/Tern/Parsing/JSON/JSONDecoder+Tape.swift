import Foundation

extension JSONDecoder {
    /// Decodes as ``decode(_:from:)`` does, faster: through a ``JSONTape`` when this decoder's
    /// settings are ones the tape reads the same way, with `JSONDecoder` itself deciding every
    /// document the tape refuses and every value that fails, errors included.
    ///
    /// Only on Linux, where `JSONDecoder` is swift-foundation's, whose reading the tape follows;
    /// Apple's older systems read some values their own way.
    package func decodeFaster<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        if let value = decodedByTape(type, from: data) { return value }
        return try decode(type, from: data)
    }

    /// The value a tape decodes from `data`, or `nil` when it leaves the document to `JSONDecoder`.
    func decodedByTape<T: Decodable>(_ type: T.Type, from data: Data) -> T? {
        guard let settings = tapeSettings, let tape = JSONTape(data, settings: settings, userInfo: userInfo) else { return nil }
        let value = try? tape.decode(type, at: 0, parent: nil, key: .root)
        return tape.failed ? nil : value
    }

    /// How a tape reads this decoder's values, or `nil` when its settings are not the tape's to
    /// follow: a subclass, keys converted other than from snake case, JSON5, non-conforming
    /// floats, dates other than numbers, data decoded by a closure.
    private var tapeSettings: JSONTape.Settings? {
        #if canImport(Darwin)
        return nil
        #else
        let snakeCase: Bool
        switch keyDecodingStrategy {
        case .useDefaultKeys: snakeCase = false
        case .convertFromSnakeCase: snakeCase = true
        default: return nil
        }
        guard Swift.type(of: self) == JSONDecoder.self, case .throw = nonConformingFloatDecodingStrategy, !allowsJSON5,
              !assumesTopLevelDictionary else { return nil }
        let dates: JSONTape.DateReading
        switch dateDecodingStrategy {
        case .deferredToDate: dates = .deferredToDate
        case .secondsSince1970: dates = .secondsSince1970
        case .millisecondsSince1970: dates = .millisecondsSince1970
        default: return nil
        }
        switch dataDecodingStrategy {
        case .base64: return JSONTape.Settings(dates: dates, base64Data: true, snakeCase: snakeCase)
        case .deferredToData: return JSONTape.Settings(dates: dates, base64Data: false, snakeCase: snakeCase)
        default: return nil
        }
        #endif
    }
}
