/// An error that ends a command: one line that says what happened and what to do.
public struct VLoggerError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
