/// Where an API keeps the cookies servers set: see ``CookieJar`` for the rules they follow.
public enum CookieKeeping: Sendable {
    /// In a jar of the API's own, in memory, which goes with it: the default.
    case inAJarOfItsOwn
    /// In `jar`, shared with whatever else uses it (another API, say).
    case shared(CookieJar)
    /// Nowhere: no cookie is kept or sent, but those a request's own `Cookie` header carries.
    case none

    /// The jar for a new API.
    func makeJar() -> CookieJar? {
        switch self {
        case .inAJarOfItsOwn: CookieJar()
        case .shared(let jar): jar
        case .none: nil
        }
    }
}
