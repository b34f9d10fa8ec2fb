/// A web service's client, ready to use: hold one in a `Sendable` type of your own and write one
/// short method per endpoint. This is the way to define a service that Swift 6 checks.
///
/// ```swift
/// struct Shop: Sendable {
///     let client: APIClient
///
///     func products(page: Int) -> Promise<[Product]> {
///         client.request(route: .get("/products"), parameters: URLParameters(["page": page]))
///     }
/// }
///
/// let shop = Shop(client: APIClient(configuration: APIConfiguration(baseURL: "https://shop.example/api/v2")))
/// ```
///
/// The compiler checks `Shop`: a struct is `Sendable` only when each of its stored properties
/// is, so state added later (a cache, a token store) must be made safe to share before it
/// compiles. The client itself is `Sendable` because it is final and immutable, with what
/// changes (the delegate, the refresh, cookies) behind locks of Tern's. A subclass of
/// ``AbstractAPI`` works as well, but Swift cannot check its stored properties: it must be
/// marked `@unchecked Sendable`, and keeping it safe is left to you.
///
/// Relative routes join the configuration's ``APIConfiguration/baseURL``; everything else
/// (parser, transport, callback queue, clock) is ``AbstractAPI``'s.
public final class APIClient: AbstractAPI, @unchecked Sendable {}   // unchecked: a subclass of an unchecked class must say so again
