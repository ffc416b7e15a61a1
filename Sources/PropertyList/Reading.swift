import FoundationEssentials

/// Reading property lists from bytes: the format told by the first bytes,
/// then the binary or JSON reader of PropertyListValues, or libxml2 for XML.
extension Plist {
    /// Reads XML, binary (`bplist00`) or, when `allowJSON`, a JSON object.
    public static func read(
        _ data: Data, limits: PlistLimits = PlistLimits(), allowJSON: Bool = false
    ) throws -> PlistValue {
        switch opening(of: data, allowJSON: allowJSON) {
        case .binary:
            return try BinaryPlistReader.read(data, limits: limits)
        case .otherBinary:
            let version = String(decoding: data.prefix(8), as: UTF8.self).filter { $0.isASCII && !$0.isWhitespace }
            throw PlistError("unsupported binary property list version '\(version)': only bplist00 is read")
        case .json:
            return try JSON.read(data, limits: limits)
        case .xml:
            return try XMLPlistReader.read(data, limits: limits)
        }
    }

    private enum Opening { case binary, otherBinary, json, xml }

    /// Which reader the first bytes of `data` call for.
    private static func opening(of data: Data, allowJSON: Bool) -> Opening {
        data.withUnsafeBytes { bytes in
            if bytes.starts(with: "bplist00".utf8) { return .binary }
            if bytes.starts(with: "bplist".utf8) { return .otherBinary }
            guard allowJSON, let first = bytes.first(where: { !JSON.isSpace($0) }) else { return .xml }
            return first == UInt8(ascii: "{") || first == UInt8(ascii: "[") ? .json : .xml
        }
    }

    /// Reads the file at `path`, refusing files over the size limit before reading them.
    public static func read(contentsOf path: String, limits: PlistLimits = PlistLimits()) throws -> PlistValue {
        try read(readFile(path, limit: limits.maximumSize), limits: limits)
    }
}

extension PlistDecoder {
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try decode(type, from: Plist.read(data))
    }
}
