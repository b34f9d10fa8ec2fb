import Foundation

/// Which certificate authorities a transfer trusts, in libcurl's terms.
enum CurlTrust: Equatable {
    /// libcurl's defaults: the system's bundle and directory of authorities.
    case system
    /// The authorities in one PEM file, and no others.
    case only(certificates: URL)

    /// The string options that say it: a `nil` value clears the option, one left out keeps
    /// libcurl's default.
    var options: [(option: Int32, value: String?)] {
        switch self {
        case .system:
            []
        case .only(let certificates):
            // The system's directory of authorities (`CURLOPT_CAPATH`) would be trusted besides
            // the file if it were left set.
            [(CurlOption.caInfo, certificates.path), (CurlOption.caPath, nil)]
        }
    }
}
