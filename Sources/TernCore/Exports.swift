// Tern's public API speaks URLRequest, HTTPURLResponse and DispatchQueue, so `import Tern`
// brings them along, on Linux (where they live in FoundationNetworking) as on Apple platforms.
@_exported import Dispatch
@_exported import Foundation
#if canImport(FoundationNetworking)
@_exported import FoundationNetworking
#endif
