extension [any CodingKey] {
    /// The path written as people read it: `items[2].price`.
    package var pathDescription: String {
        reduce(into: "") { text, key in
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
    }
}
