/// The API a plugin hears from, as a value: the configuration its requests go out with. A
/// plugin sees what happens, and cannot reach back into the API to change it.
public struct APIContext: Sendable {
    /// The API's configuration: its environment's name and base URL, headers and policies.
    public let configuration: APIConfiguration

    /// Describes an API with `configuration`.
    package init(configuration: APIConfiguration) {
        self.configuration = configuration
    }
}
