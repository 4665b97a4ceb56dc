import Foundation
import ISO15693

/// TI RF430FRL152H sensor transponder: one temperature sample as TI's SLOA233 reader takes it (configure blocks 1–7,
/// then block 0; poll block 0 until ready; read block 9) and TI's conversion of the ADC values. Facts and sources:
/// docs/reference/sensor-tags.md ("TI RF430FRL152H").
public enum RF430 {
    public static let manufacturer = ManufacturerCode.texasInstruments
    public static let blockCount = 243
    public static let blockSize = 8
    /// Read and Write Multiple Blocks carry at most 24 bytes.
    public static let maxBlocksPerTransfer = 3
    /// The block the sampled ADC values are read from.
    public static let resultBlock = 9

    /// The configuration TI's reader writes, in its order: blocks 1–7, then block 0 (which starts the sample).
    public static let configuration: [(block: Int, data: [UInt8])] = [
        (1, [0, 0, 0, 0, 0, 0, 0, 0]),
        (2, [0x19, 0x19, 0, 0, 0, 0, 0, 0]),
        (3, [0, 0, 0, 0, 0, 0, 0, 0]),
        (4, [0, 0, 0, 0, 0, 0, 0, 0]),
        (5, [0, 0, 0, 0, 0, 0, 0, 0]),
        (6, [0, 0, 0, 0, 0, 0, 0, 0]),
        (7, [0, 0, 0, 0, 0, 0, 0, 0]),
        (0, [0x01, 0x00, 0x03, 0x03, 0x01, 0x01, 0x00, 0x40]),
    ]

    /// Block 0's status (byte 1, bits 1–0): 10 ready, 11 error; anything else: not yet.
    public enum SampleStatus: Equatable, Sendable {
        case busy, ready, error
        public init(block0: [UInt8]) throws(SensorError) {
            guard block0.count >= 2 else { throw SensorError.malformed("RF430 block 0 of \(block0.count) bytes") }
            switch block0[1] & 0x03 {
            case 0x02: self = .ready
            case 0x03: self = .error
            default: self = .busy
            }
        }
    }

    /// The two ADC values of block 9: bytes 0–1 the reference resistor's, bytes 2–3 the thermistor's, each
    /// little-endian.
    public struct Sample: Equatable, Sendable {
        public let reference: UInt16
        public let thermistor: UInt16
        public init(reference: UInt16, thermistor: UInt16) {
            self.reference = reference
            self.thermistor = thermistor
        }
        public init(block9: [UInt8]) throws(SensorError) {
            guard block9.count >= 4 else { throw SensorError.malformed("RF430 block 9 of \(block9.count) bytes") }
            reference = UInt16(block9[0]) | UInt16(block9[1]) << 8
            thermistor = UInt16(block9[2]) | UInt16(block9[3]) << 8
        }
        /// TI's conversion for its sensor patch (100 kΩ thermistor ERT-J1VS104FA, 100 kΩ reference):
        /// R = ((therm × 0.9 / 16384) / 2 / 0.0000024) × 8738.13 / ref, T = 4330 / ln(R / 0.049293) − 273.15.
        /// nil when a value is 0 or saturated (0x3FFF): no temperature.
        public var celsius: Double? {
            guard reference > 0, thermistor > 0, reference < 0x3FFF, thermistor < 0x3FFF else { return nil }
            let r = ((Double(thermistor) * 0.9 / 16384) / 2 / 0.0000024) * 8738.13 / Double(reference)
            return 4330 / log(r / 0.049293) - 273.15
        }
        /// The thermistor's resistance in ohms by the same formula.
        public var thermistorOhms: Double {
            ((Double(thermistor) * 0.9 / 16384) / 2 / 0.0000024) * 8738.13 / Double(max(1, reference))
        }
    }
}
