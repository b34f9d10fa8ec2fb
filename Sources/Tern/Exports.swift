// `import Tern` is all a user writes: it brings the layers below (promises, errors, transports)
// and Foundation's networking types, which Tern's API speaks.
@_exported import TernCore
@_exported import TernTransport
