import Foundation
import Logging
import NIOCore
import NIOPosix
import OPCUA

/// The OPC UA server on SwiftNIO: a TCP listener whose connections each carry one secure channel, and the
/// subscriptions' cycle on a timer.
public final class OPCUAServer: @unchecked Sendable {
    public let core: ServerCore
    private let group: EventLoopGroup
    private var channel: Channel?
    private var ticker: RepeatedTask?
    private let lock = NSLock()

    /// The cycle's period: Publish answers leave at most this late after their interval.
    static let tickMs: Int64 = 5

    public init(core: ServerCore, group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.core = core
        self.group = group
    }

    /// Binds the listener (port 0: any free port) and starts the cycle; answers the port bound.
    @discardableResult
    public func start() async throws -> Int {
        let core = self.core
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            // Past 256 KiB of answers the client has not taken, the connection stops reading its requests until it
            // takes them (below 64 KiB): a client that does not read cannot make the server buffer without end.
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 65_536, high: 262_144))
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = ConnectionHandler(core: core)
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(MessageFramer(maxSize: core.configuration.limits.receiveBufferSize)))
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        let bound = try await bootstrap.bind(host: core.configuration.host, port: core.configuration.port).get()
        let loop = group.next()
        let task = loop.scheduleRepeatedTask(
            initialDelay: .milliseconds(Self.tickMs), delay: .milliseconds(Self.tickMs)
        ) { _ in core.tick() }
        lock.withLock {
            channel = bound
            ticker = task
        }
        core.port = bound.localAddress?.port ?? core.configuration.port
        return core.port
    }

    /// Stops listening and closes every connection's channel.
    public func stop() async {
        let (c, t) = lock.withLock { (channel, ticker) }
        t?.cancel()
        try? await c?.close()
        // The listener's close leaves its connections open: each gets an ERR (Bad_ServerHalted) and is closed.
        core.closeAll()
    }
}

/// Cuts the byte stream into UA-TCP messages by their header's size, refused past the receive buffer before
/// anything is allocated for them (OPC 10000-6 §7.1.2).
struct MessageFramer: ByteToMessageDecoder {
    typealias InboundOut = [UInt8]
    let maxSize: UInt32

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard buffer.readableBytes >= MessageHeader.length,
            let head = buffer.getBytes(at: buffer.readerIndex, length: MessageHeader.length)
        else { return .needMoreData }
        let header: MessageHeader
        do { header = try MessageHeader.parse(head, maxSize: maxSize) } catch { throw FramingError(error: error) }
        guard buffer.readableBytes >= Int(header.size), let bytes = buffer.readBytes(length: Int(header.size)) else {
            return .needMoreData
        }
        context.fireChannelRead(wrapInboundOut(bytes))
        return .continue
    }
}

struct FramingError: Error {
    let error: TransportError
}

/// One connection: hands whole messages to its secure channel and writes what it sends.
final class ConnectionHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = [UInt8]
    typealias OutboundOut = ByteBuffer
    private let core: ServerCore
    private var secure: SecureChannel?

    init(core: ServerCore) { self.core = core }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        // Always through the loop's queue, even from the loop itself: the secure channel numbers its chunks under
        // its lock and hands them over in that order, and the queue keeps it (a write made directly on the loop
        // would overtake one another thread queued a moment before: sequence numbers out of order).
        let core = self.core
        let send: @Sendable ([UInt8]) -> Void = { bytes in
            core.output(queued: bytes.count)
            channel.eventLoop.execute {
                channel.writeAndFlush(channel.allocator.buffer(bytes: bytes)).whenComplete { _ in
                    core.output(written: bytes.count)
                }
            }
        }
        // Queued behind the writes before it, so that an ERR leaves before the connection closes.
        let close: @Sendable () -> Void = { channel.eventLoop.execute { channel.close(promise: nil) } }
        guard let secure = core.connect(send: send, close: close) else {
            send(ErrorMessage(error: .badTcpNotEnoughResources, reason: "too many connections").message)
            close()
            return
        }
        self.secure = secure
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        secure?.receive(unwrapInboundIn(data))
    }

    /// Backpressure: no requests are read while the answers wait above the high water mark.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        context.channel.setOption(ChannelOptions.autoRead, value: context.channel.isWritable).whenFailure { _ in }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        secure?.connectionClosed()
        secure = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if let f = error as? FramingError, let secure {
            secure.fail(f.error)
        } else if let f = error as? FramingError {
            let channel = context.channel
            channel.writeAndFlush(channel.allocator.buffer(bytes: f.error.message.message))
                .whenComplete { _ in channel.close(promise: nil) }
        } else {
            context.close(promise: nil)
        }
    }
}
