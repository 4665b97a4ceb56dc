import Foundation
import VLoggerModel
import ISO15693

/// How a field's bytes are read.
public enum FieldType: String, Sendable, CaseIterable {
    case hex, ascii
    case u8, i8
    case u16le, u16be, i16le, i16be
    case u32le, u32be, i32le, i32be
    case f32le, f32be

    /// Bytes the type takes (nil: set by `length`).
    public var width: Int? {
        switch self {
        case .hex, .ascii: return nil
        case .u8, .i8: return 1
        case .u16le, .u16be, .i16le, .i16be: return 2
        case .u32le, .u32be, .i32le, .i32be, .f32le, .f32be: return 4
        }
    }

    public var isNumeric: Bool { width != nil }

    /// What its values are, for outputs that declare a type before the first value.
    public var kind: FieldInfo.Kind {
        switch self {
        case .hex: return .hex
        case .ascii: return .text
        default: return .number
        }
    }
}

/// A named value at a place in a tag's memory: `block` and `byte` give where it starts (it may run on into
/// the next blocks), `type` how to read it, and for numbers `value = raw × scale + offset` in `unit`.
public struct FieldDecoder: Equatable, Sendable {
    public var name: String
    public var block: BlockNumber
    public var byte: Int
    public var type: FieldType
    public var length: Int
    public var scale: Double?
    public var offset: Double?
    public var unit: String?

    public init(
        name: String, block: BlockNumber, byte: Int = 0, type: FieldType, length: Int? = nil,
        scale: Double? = nil, offset: Double? = nil, unit: String? = nil
    ) {
        self.name = name
        self.block = block
        self.byte = byte
        self.type = type
        self.length = type.width ?? length ?? 1
        self.scale = scale
        self.offset = offset
        self.unit = unit
    }

    /// Blocks the field covers for a given block size.
    public func blocks(blockSize: Int) -> ClosedRange<Int> {
        let start = block.int + byte / blockSize
        let end = block.int + (byte + length - 1) / blockSize
        return start...end
    }

    /// Decodes the field from `memory`, which holds the bytes of blocks from `first` on. Nil when the
    /// bytes are not all there.
    public func decode(memory: [UInt8], first: BlockNumber, blockSize: Int) -> FieldValue? {
        let start = (block.int - first.int) * blockSize + byte
        guard start >= 0, start + length <= memory.count else { return nil }
        let b = Array(memory[start..<(start + length)])
        func uint(_ littleEndian: Bool) -> UInt64 {
            (littleEndian ? b.reversed() : b).reduce(0) { $0 << 8 | UInt64($1) }
        }
        let raw: Double
        switch type {
        case .hex: return .text(Hex.format(b, separator: ""))
        case .ascii:
            let text = String(decoding: b.prefix { $0 != 0 }, as: UTF8.self)
            return .text(String(text.unicodeScalars.map { SafeText.isUnsafe($0) || $0 == "\t" ? "." : Character($0) }))
        case .u8: raw = Double(b[0])
        case .i8: raw = Double(Int8(bitPattern: b[0]))
        case .u16le, .u16be: raw = Double(UInt16(uint(type == .u16le)))
        case .i16le, .i16be: raw = Double(Int16(bitPattern: UInt16(uint(type == .i16le))))
        case .u32le, .u32be: raw = Double(UInt32(uint(type == .u32le)))
        case .i32le, .i32be: raw = Double(Int32(bitPattern: UInt32(uint(type == .i32le))))
        case .f32le, .f32be: raw = Double(Float(bitPattern: UInt32(uint(type == .f32le))))
        }
        if scale == nil && offset == nil && type != .f32le && type != .f32be { return .integer(Int64(raw)) }
        let v = raw * (scale ?? 1) + (offset ?? 0)
        // Round away binary noise of the scale (0.01 × 2150 = 21.500000000000004) to 12 significant digits.
        return .number(v == 0 || !v.isFinite ? v : Double(String(format: "%.12g", v)) ?? v)
    }
}
