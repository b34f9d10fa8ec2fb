import Foundation

extension Array where Element == Data {
    /// The size below which the last waiting chunk takes in the next one rather than have it
    /// held apart.
    static var joiningSize: Int { 16 << 10 }

    /// Appends `chunk` to chunks that wait to be read from index `first` on (a stream's reader,
    /// or a head being judged): joined to the last of them while it is small. A server sending
    /// its body one byte at a time (one-byte chunks of chunked framing) had each byte held as a
    /// `Data` of its own, sixteen bytes apiece in the array alone: 3 MiB waiting for a stream's
    /// reader grew the process by 35 MiB.
    mutating func append(_ chunk: Data, joiningFrom first: Int) {
        if count > first, self[count - 1].count < Self.joiningSize {
            self[count - 1].append(chunk)
        } else {
            append(chunk)
        }
    }
}
