// `import Tern` is all a user writes for Tern itself: it brings the layers below (promises,
// errors, transports). Foundation is not re-exported: a file that names `URL`, `Data` or
// `URLRequest` imports Foundation (and, on Linux, FoundationNetworking) itself, as it would
// for any other library.
@_exported import TernCore
@_exported import TernTransport
