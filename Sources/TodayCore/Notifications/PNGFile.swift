import CZlib
import FoundationEssentials
import TodayProtocol

/// A notification's picture as a PNG file (8-bit RGB or RGBA, deflated by
/// zlib, no interlacing): the form todayd keeps an `image-data` picture in,
/// readable by every toolkit, so that the list holds a path rather than the
/// pixels (SPEC section 14's storage; design.md's notification pictures).
enum PNGFile {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// `image` (checked: 8 bits, 3 or 4 channels, data as its rowstride
    /// says) as a PNG file's bytes; nil where zlib cannot compress it.
    static func encode(_ image: TodayNotification.Image) -> Data? {
        let width = Int(image.width), height = Int(image.height), channels = Int(image.channels)
        let row = width * channels
        // Each row after its filter byte (0: none), without the padding a
        // rowstride may add.
        var raw = [UInt8](repeating: 0, count: height * (row + 1))
        image.data.withUnsafeBytes { (source: UnsafeRawBufferPointer) in
            for y in 0..<height {
                let from = y * Int(image.rowstride)
                for x in 0..<row { raw[y * (row + 1) + 1 + x] = source[from + x] }
            }
        }
        var capacity = compressBound(uLong(raw.count))
        var deflated = [UInt8](repeating: 0, count: Int(capacity))
        let status = compress2(&deflated, &capacity, raw, uLong(raw.count), Z_DEFAULT_COMPRESSION)
        guard status == Z_OK else { return nil }
        deflated.removeSubrange(Int(capacity)...)

        var header: [UInt8] = []
        append(UInt32(width), to: &header)
        append(UInt32(height), to: &header)
        // Bit depth 8; colour type 6 (RGBA) or 2 (RGB); deflate; adaptive
        // filtering; no interlace.
        header += [8, channels == 4 ? 6 : 2, 0, 0, 0]
        var file = signature
        chunk("IHDR", header, to: &file)
        chunk("IDAT", deflated, to: &file)
        chunk("IEND", [], to: &file)
        return Data(file)
    }

    private static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    /// A chunk: length, type, data, CRC-32 of type and data.
    private static func chunk(_ type: String, _ data: [UInt8], to file: inout [UInt8]) {
        let typed = Array(type.utf8) + data
        append(UInt32(data.count), to: &file)
        file += typed
        append(UInt32(crc32(0, typed, uInt(typed.count))), to: &file)
    }
}
