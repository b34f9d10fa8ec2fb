import Foundation

package extension NSNumber {
    /// Whether `JSONSerialization` read this number from `true` or `false`. On Linux every
    /// `NSNumber` of 0 or 1 passes `is Bool`, so booleans are told apart by their class.
    var isJSONBoolean: Bool { ObjectIdentifier(type(of: self)) == Self.booleanClass }

    private static let booleanClass = ObjectIdentifier(type(of: NSNumber(value: true)))
}
