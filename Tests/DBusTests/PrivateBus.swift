import DBus
import TestSupport
import Foundation
import Testing

extension BusDaemon {
    func connect() throws -> Connection { try Connection(address: address) }
}
