import Tern

// `tern-demo`: a tour of Tern against a loopback shop in this process (no network).
// `tern-demo <url>`: fetches the URL and prints the status, the headers and the start of the body.
// `tern-demo --help`: says so.

let help = """
    tern-demo            a tour of Tern against a shop served in this process: no network
    tern-demo <url>      fetches <url>, prints the status, the headers and the start of the body
    tern-demo --help     this text
    """

if let argument = CommandLine.arguments.dropFirst().first, argument == "--help" || argument == "-h" {
    print(help)
} else if let url = CommandLine.arguments.dropFirst().first {
    let api = APIClient(configuration: APIConfiguration(timeout: 30), responseQueue: .global())
    do {
        let response: Response = try await api.request(route: .get(url), options: RequestOptions(validation: .acceptAll)).value
        print("\(response.statusCode) from \(response.url?.absoluteString ?? url) in \(Int(response.duration * 1000)) ms")
        print(response.headers)
        print(String(decoding: response.body.prefix(600), as: UTF8.self))
    } catch {
        print("error: \(error)")
    }
} else if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *) {
    try await Tour.run()
} else {
    print("The tour keeps its state in Synchronization's Mutex: it needs macOS 15, iOS 18 or later.")
}
