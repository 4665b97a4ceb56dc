import Foundation
import OPCUA

/// The attributes a Read or Write names (OPC 10000-6 §A.1).
public enum AttributeId: UInt32, Sendable, CaseIterable {
    case nodeId = 1, nodeClass, browseName, displayName, description, writeMask, userWriteMask, isAbstract
    case symmetric, inverseName, containsNoLoops, eventNotifier, value, dataType, valueRank, arrayDimensions
    case accessLevel, userAccessLevel, minimumSamplingInterval, historizing, executable, userExecutable
    case dataTypeDefinition, rolePermissions, userRolePermissions, accessRestrictions, accessLevelEx
}

/// Namespace 0's reference types and nodes the server itself names (their numbers from NodeIds.csv).
public enum ReferenceTypeIds {
    public static let references = NodeId(31)
    public static let hierarchicalReferences = NodeId(33)
    public static let organizes = NodeId(35)
    public static let hasEventSource = NodeId(36)
    public static let hasModellingRule = NodeId(37)
    public static let hasTypeDefinition = NodeId(40)
    public static let hasSubtype = NodeId(45)
    public static let hasProperty = NodeId(46)
    public static let hasComponent = NodeId(47)
    public static let hasNotifier = NodeId(48)
}

/// One reference of a node: its type, the node it points to and its direction.
public struct Reference: Hashable, Sendable {
    public var type: NodeId
    public var target: NodeId
    public var forward: Bool
    public init(_ type: NodeId, _ target: NodeId, forward: Bool = true) {
        self.type = type
        self.target = target
        self.forward = forward
    }
}

/// One node of the address space: its attributes (those of its class; nil where the class has none) and its
/// references. A variable's value is either held (`value`) or asked for when read (`AddressSpace.source`).
public struct Node: Sendable {
    public var id: NodeId
    public var nodeClass: NodeClass
    public var browseName: QualifiedName
    public var displayName: LocalizedText
    public var description: LocalizedText?
    public var isAbstract: Bool?
    public var symmetric: Bool?
    public var inverseName: LocalizedText?
    public var eventNotifier: UInt8?
    public var dataType: NodeId?
    public var valueRank: Int32?
    public var arrayDimensions: [UInt32]?
    public var accessLevel: UInt8?
    public var minimumSamplingInterval: Double?
    public var executable: Bool?
    public var value: DataValue?
    /// A DataType's DataTypeDefinition attribute (a StructureDefinition or EnumDefinition, OPC 10000-3 §5.8.3):
    /// a structure's fields with its supertypes' first.
    public var dataTypeDefinition: Variant?
    public var references: [Reference] = []

    public init(
        id: NodeId, nodeClass: NodeClass, browseName: QualifiedName, displayName: LocalizedText? = nil,
        description: LocalizedText? = nil
    ) {
        self.id = id
        self.nodeClass = nodeClass
        self.browseName = browseName
        self.displayName = displayName ?? LocalizedText(browseName.name)
        self.description = description
    }

    /// The access level bits (OPC 10000-3 §8.57): current read 0x01, current write 0x02.
    public static let readable: UInt8 = 0x01
    public static let writable: UInt8 = 0x02

    /// The node's type definition (its HasTypeDefinition target), for a browse result.
    public var typeDefinition: NodeId? {
        references.first { $0.forward && $0.type == ReferenceTypeIds.hasTypeDefinition }?.target
    }
}

/// The server's nodes: namespace 0's part (Generated/Namespace0.swift) and the server's own, the references
/// between them, and the answers of Read, Browse and TranslateBrowsePaths over them. Thread-safe: the services
/// read it from every connection while the field state adds and removes the gateway's nodes.
public final class AddressSpace: @unchecked Sendable {
    private let lock = NSLock()
    private var nodes: [NodeId: Node] = [:]
    /// Values asked for when read (the server's status, the field's live values).
    private var sources: [NodeId: @Sendable () -> DataValue] = [:]
    /// Writes a node takes (nil: not writable), answering the status of the write.
    private var writers: [NodeId: @Sendable (DataValue) -> StatusCode] = [:]
    /// The namespace URIs, namespace 0 first.
    public private(set) var namespaces: [String] = ["http://opcfoundation.org/UA/"]

    public init() {}

    /// The DI model's namespace URI (OPC 10000-100), the generated nodes' namespace 2.
    public static let deviceIntegrationUri = "http://opcfoundation.org/UA/DI/"
    /// The AutoID model's namespace URI (OPC 30010), the generated nodes' namespace 3.
    public static let autoIdUri = "http://opcfoundation.org/UA/AutoID/"

    /// The address space with the generated nodes: namespace 0's part, the DI model and the AutoID model's types.
    /// Its namespace table is namespace 0, the server's own (OPC 10000-5 §8.3.2: index 1 is reserved for the local
    /// server and holds its ApplicationUri), DI, then AutoID: the indices the generator wrote
    /// (tools/opcua/nodeset.py).
    public static func standard(applicationUri: String) throws -> AddressSpace {
        let space = AddressSpace()
        space.namespaces = ["http://opcfoundation.org/UA/", applicationUri, deviceIntegrationUri, autoIdUri]
        for lines in [namespace0Lines, deviceIntegrationLines, autoIdLines] {
            for node in try GeneratedNodes.nodes(lines) { space.add(node, mirror: false) }
        }
        return space
    }

    /// Adds a namespace URI and answers its index (the one it has when it is already there).
    public func namespace(_ uri: String) -> UInt16 {
        lock.withLock {
            if let i = namespaces.firstIndex(of: uri) { return UInt16(i) }
            namespaces.append(uri)
            return UInt16(namespaces.count - 1)
        }
    }

    /// Adds (or replaces) a node; with `mirror`, each reference is also written on its target, inverted.
    public func add(_ node: Node, mirror: Bool = true) {
        lock.withLock {
            if mirror { insert(node) } else { nodes[node.id] = node }
        }
    }

    /// Removes a node and every reference to it.
    public func remove(_ id: NodeId) {
        lock.withLock {
            guard let node = nodes.removeValue(forKey: id) else { return }
            sources[id] = nil
            writers[id] = nil
            for r in node.references where nodes[r.target] != nil {
                nodes[r.target]!.references.removeAll { $0.target == id }
            }
        }
    }

    /// The value of `id` is asked of `source` when read.
    public func setSource(_ id: NodeId, _ source: @escaping @Sendable () -> DataValue) {
        lock.withLock { sources[id] = source }
    }

    /// Writes to `id`'s value go to `writer` (the node's access level should say it is writable).
    public func setWriter(_ id: NodeId, _ writer: @escaping @Sendable (DataValue) -> StatusCode) {
        lock.withLock { writers[id] = writer }
    }

    /// Sets a held value.
    public func setValue(_ id: NodeId, _ value: DataValue) {
        lock.withLock { nodes[id]?.value = value }
    }

    public func node(_ id: NodeId) -> Node? { lock.withLock { nodes[id] } }
    public var count: Int { lock.withLock { nodes.count } }
    public var allIds: [NodeId] { lock.withLock { Array(nodes.keys) } }

    // MARK: Instances

    /// Modelling rules (OPC 10000-3 §6.4.4): Mandatory i=78, Optional i=80.
    static let mandatory = NodeId(78)
    static let optionalRule = NodeId(80)

    /// One instance declaration: a browse name and the nodes that declare it, the most derived first (a subtype
    /// may declare again what its supertype declared: its modelling rule wins, and the children of all count).
    struct Declaration {
        var name: QualifiedName
        var nodes: [Node]
        var reference: NodeId
        var mandatory: Bool
    }

    /// With the lock held: the variables, objects and methods `node` names by HasComponent or HasProperty with the
    /// modelling rule Mandatory or Optional (placeholders left out).
    private func ownDeclarations(_ node: Node) -> [Declaration] {
        node.references.compactMap { r in
            guard r.forward, r.type == ReferenceTypeIds.hasComponent || r.type == ReferenceTypeIds.hasProperty,
                let child = nodes[r.target], [.object, .variable, .method].contains(child.nodeClass)
            else { return nil }
            let rule = child.references.first { $0.forward && $0.type == ReferenceTypeIds.hasModellingRule }?.target
            guard rule == Self.mandatory || rule == Self.optionalRule else { return nil }
            return Declaration(
                name: child.browseName, nodes: [child], reference: r.type, mandatory: rule == Self.mandatory)
        }
    }

    /// Declarations merged by browse name, in order: the first keeps its place and rule, later ones add their nodes.
    private func merged(_ lists: [[Declaration]]) -> [Declaration] {
        var out: [Declaration] = []
        var at: [QualifiedName: Int] = [:]
        for d in lists.joined() {
            if let i = at[d.name] {
                out[i].nodes += d.nodes
            } else {
                at[d.name] = out.count
                out.append(d)
            }
        }
        return out
    }

    /// With the lock held: the instance declarations of a type (OPC 10000-3 §6.3.3), its own first and then its
    /// supertypes'.
    func declarations(of type: NodeId) -> [Declaration] {
        var lists: [[Declaration]] = []
        var current: NodeId? = type
        while let t = current, lists.count < 32, let typeNode = nodes[t] {
            lists.append(ownDeclarations(typeNode))
            current = typeNode.references.first { !$0.forward && $0.type == ReferenceTypeIds.hasSubtype }?.target
        }
        return merged(lists)
    }

    /// Makes an object of `type` under `parent` (OPC 10000-3 §6.3): its mandatory children, and the optional ones
    /// whose path (browse names joined by "/", e.g. `Diagnostics/Presence`) is in `optional`, each with the browse
    /// name, class, data type and initial value its declaration has and its declaration's type definition, and
    /// their own children the same way (the declarations', then their type's). Values are read only (a source or
    /// `setValue` gives them). Answers the node id of each path made ("" for the object itself).
    @discardableResult
    public func instantiate(
        type: NodeId, id: NodeId, browseName: QualifiedName, parent: NodeId, reference: NodeId,
        optional: Set<String> = [], childId: (String) -> NodeId
    ) -> [String: NodeId] {
        lock.withLock {
            var made: [String: NodeId] = ["": id]
            var object = Node(id: id, nodeClass: .object, browseName: browseName)
            object.eventNotifier = 0
            object.references = [
                Reference(reference, parent, forward: false), Reference(ReferenceTypeIds.hasTypeDefinition, type),
            ]
            insert(object)
            children(declarations(of: type), instance: id, path: "", optional: optional, childId: childId, made: &made)
            return made
        }
    }

    /// With the lock held: `instance`'s children from `list`, and theirs.
    private func children(
        _ list: [Declaration], instance: NodeId, path: String, optional: Set<String>, childId: (String) -> NodeId,
        made: inout [String: NodeId]
    ) {
        for d in list {
            let childPath = path.isEmpty ? d.name.name ?? "" : "\(path)/\(d.name.name ?? "")"
            guard d.mandatory || optional.contains(childPath), made[childPath] == nil, made.count < 1_000,
                let first = d.nodes.first
            else { continue }
            let id = childId(childPath)
            var n = Node(
                id: id, nodeClass: first.nodeClass, browseName: d.name, displayName: first.displayName,
                description: first.description)
            let typeDefinition = first.typeDefinition
            n.references = [Reference(d.reference, instance, forward: false)]
            if let typeDefinition { n.references.append(Reference(ReferenceTypeIds.hasTypeDefinition, typeDefinition)) }
            if first.nodeClass == .variable {
                n.dataType = first.dataType
                n.valueRank = first.valueRank
                n.arrayDimensions = first.arrayDimensions
                n.accessLevel = Node.readable
                n.minimumSamplingInterval = first.minimumSamplingInterval ?? 0
                n.value = d.nodes.lazy.compactMap(\.value).first
            } else if first.nodeClass == .method {
                n.executable = true
            } else {
                n.eventNotifier = 0
            }
            insert(n)
            made[childPath] = id
            // Its children: what each of its declarations declares, then what its type does.
            let own = merged(d.nodes.map { ownDeclarations($0) } + [declarations(of: typeDefinition ?? NodeId(58))])
            children(own, instance: id, path: childPath, optional: optional, childId: childId, made: &made)
        }
    }

    /// With the lock held: adds a node and writes each of its references on its target too, inverted.
    private func insert(_ node: Node) {
        nodes[node.id] = node
        for r in node.references {
            let back = Reference(r.type, node.id, forward: !r.forward)
            if nodes[r.target] != nil, !nodes[r.target]!.references.contains(back) {
                nodes[r.target]!.references.append(back)
            }
        }
    }

    // MARK: Read

    /// One attribute of one node, as Read answers it (OPC 10000-4 §5.10.2): Bad_NodeIdUnknown, or
    /// Bad_AttributeIdInvalid for an attribute its class does not have.
    public func read(_ id: NodeId, _ attribute: UInt32, now: DateTime) -> DataValue {
        let (found, source) = lock.withLock { (nodes[id], sources[id]) }
        guard let node = found else { return DataValue(status: .badNodeIdUnknown) }
        guard let a = AttributeId(rawValue: attribute) else { return DataValue(status: .badAttributeIdInvalid) }
        func v(_ s: Scalar) -> DataValue { DataValue(value: .scalar(s)) }
        let invalid = DataValue(status: .badAttributeIdInvalid)
        switch a {
        case .nodeId: return v(.nodeId(node.id))
        case .nodeClass: return v(.int32(node.nodeClass.rawValue))
        case .browseName: return v(.qualifiedName(node.browseName))
        case .displayName: return v(.localizedText(node.displayName))
        case .description: return v(.localizedText(node.description ?? LocalizedText(nil)))
        case .writeMask, .userWriteMask: return v(.uInt32(0))
        case .isAbstract: return node.isAbstract.map { v(.boolean($0)) } ?? invalid
        case .symmetric: return node.symmetric.map { v(.boolean($0)) } ?? invalid
        case .inverseName:
            guard node.nodeClass == .referenceType else { return invalid }
            return v(.localizedText(node.inverseName ?? LocalizedText(nil)))
        case .containsNoLoops: return node.nodeClass == .view ? v(.boolean(true)) : invalid
        case .eventNotifier:
            guard node.nodeClass == .object || node.nodeClass == .view else { return invalid }
            return v(.byte(node.eventNotifier ?? 0))
        case .value:
            guard node.nodeClass == .variable || node.nodeClass == .variableType else { return invalid }
            if let source { return source() }
            var value = node.value ?? DataValue(value: .null)
            if node.nodeClass == .variable, value.sourceTimestamp == nil { value.serverTimestamp = now }
            return value
        case .dataType: return node.dataType.map { v(.nodeId($0)) } ?? invalid
        case .valueRank: return node.valueRank.map { v(.int32($0)) } ?? invalid
        case .arrayDimensions:
            guard node.valueRank != nil else { return invalid }
            return DataValue(value: .array(.uInt32, node.arrayDimensions?.map { .uInt32($0) }))
        case .accessLevel, .userAccessLevel: return node.accessLevel.map { v(.byte($0)) } ?? invalid
        case .accessLevelEx: return node.accessLevel.map { v(.uInt32(UInt32($0))) } ?? invalid
        case .minimumSamplingInterval: return node.minimumSamplingInterval.map { v(.double($0)) } ?? invalid
        case .historizing: return node.nodeClass == .variable ? v(.boolean(false)) : invalid
        case .executable, .userExecutable: return node.executable.map { v(.boolean($0)) } ?? invalid
        case .dataTypeDefinition:
            return node.dataTypeDefinition.map { DataValue(value: $0) } ?? invalid
        case .rolePermissions, .userRolePermissions, .accessRestrictions: return invalid
        }
    }

    // MARK: Write

    /// A write of one attribute (OPC 10000-4 §5.10.4): only a variable's value, only where a writer takes it.
    public func write(_ value: WriteValue) -> StatusCode {
        let (found, writer) = lock.withLock { (nodes[value.nodeId], writers[value.nodeId]) }
        guard let node = found else { return .badNodeIdUnknown }
        guard AttributeId(rawValue: value.attributeId) != nil else { return .badAttributeIdInvalid }
        guard value.attributeId == AttributeId.value.rawValue, node.nodeClass == .variable else {
            return .badNotWritable
        }
        guard value.indexRange == nil || value.indexRange == "" else { return .badWriteNotSupported }
        guard let writer, (node.accessLevel ?? 0) & Node.writable != 0 else { return .badNotWritable }
        return writer(value.value)
    }

    // MARK: Types

    /// Whether `type` is `base` or one of its subtypes (HasSubtype, followed down from `base`).
    public func isSubtype(_ type: NodeId, of base: NodeId) -> Bool {
        lock.withLock { subtype(type, of: base) }
    }

    /// The built-in type a value of DataType `type` travels as (OPC 10000-3 §5.8.2): the first of namespace 0's
    /// built-in types (i=1 … i=25) up its supertypes, a structure's as an ExtensionObject and an enumeration's as an
    /// Int32; nil for an unknown type or BaseDataType (any value).
    public func builtInType(of type: NodeId) -> BuiltInType? {
        lock.withLock {
            var current = type
            var seen = Set<NodeId>()
            while seen.insert(current).inserted {
                if current.namespace == 0, case .numeric(let n) = current.identifier {
                    if n == 22 { return .extensionObject }
                    if n == 29 { return .int32 }
                    if n != 24, n <= 25, let t = BuiltInType(rawValue: UInt8(n)) { return t }
                    if n == 24 { return nil }
                }
                guard
                    let up = nodes[current]?.references.first(where: {
                        !$0.forward && $0.type == ReferenceTypeIds.hasSubtype
                    })
                else { return nil }
                current = up.target
            }
            return nil
        }
    }

    /// The method of `object` (a HasComponent target) with the browse name of `declaration`, a method node of its
    /// type: a client may call a type's method on an instance (OPC 10000-4 §5.11.2).
    public func instanceMethod(of object: NodeId, declaredBy declaration: NodeId) -> NodeId? {
        lock.withLock {
            guard let name = nodes[declaration]?.browseName, nodes[declaration]?.nodeClass == .method else {
                return nil
            }
            return nodes[object]?.references.first {
                $0.forward && $0.type == ReferenceTypeIds.hasComponent && nodes[$0.target]?.browseName == name
                    && nodes[$0.target]?.nodeClass == .method
            }?.target
        }
    }

    /// The property of `node` with the browse name `name` (a method's `InputArguments`), if it has one.
    public func property(_ node: NodeId, named name: String) -> NodeId? {
        lock.withLock {
            nodes[node]?.references.first {
                $0.forward && $0.type == ReferenceTypeIds.hasProperty && nodes[$0.target]?.browseName.name == name
            }?.target
        }
    }

    private func subtype(_ type: NodeId, of base: NodeId) -> Bool {
        var current = type
        var seen = Set<NodeId>()
        while seen.insert(current).inserted {
            if current == base { return true }
            guard
                let up = nodes[current]?.references.first(where: {
                    !$0.forward && $0.type == ReferenceTypeIds.hasSubtype
                })
            else { return false }
            current = up.target
        }
        return false
    }

    // MARK: Browse

    /// The references of one node a BrowseDescription asks for (OPC 10000-4 §5.8.2), each described by the
    /// result mask's fields; Bad_NodeIdUnknown, Bad_ReferenceTypeIdInvalid, Bad_BrowseDirectionInvalid.
    public func browse(_ d: BrowseDescription) -> (status: StatusCode, references: [ReferenceDescription]) {
        lock.withLock {
            guard let node = nodes[d.nodeId] else { return (.badNodeIdUnknown, []) }
            if !d.referenceTypeId.isNull {
                guard let t = nodes[d.referenceTypeId], t.nodeClass == .referenceType else {
                    return (.badReferenceTypeIdInvalid, [])
                }
            }
            guard d.browseDirection != .invalid else { return (.badBrowseDirectionInvalid, []) }
            var out: [ReferenceDescription] = []
            for r in node.references {
                switch d.browseDirection {
                case .forward where !r.forward, .inverse where r.forward: continue
                default: break
                }
                if !d.referenceTypeId.isNull {
                    let matches =
                        r.type == d.referenceTypeId || (d.includeSubtypes && subtype(r.type, of: d.referenceTypeId))
                    if !matches { continue }
                }
                guard let target = nodes[r.target] else { continue }
                if d.nodeClassMask != 0, UInt32(target.nodeClass.rawValue) & d.nodeClassMask == 0 { continue }
                out.append(describe(r, target, mask: d.resultMask))
            }
            return (.good, out)
        }
    }

    private func describe(_ r: Reference, _ target: Node, mask: UInt32) -> ReferenceDescription {
        // ResultMask bits (OPC 10000-4 §5.8.2.2): 1 type, 2 direction, 4 class, 8 browse name, 16 display name,
        // 32 type definition; 0 is taken as all by many clients, so it answers all.
        let all = mask == 0
        var d = ReferenceDescription(nodeId: ExpandedNodeId(target.id))
        if all || mask & 1 != 0 { d.referenceTypeId = r.type }
        d.isForward = r.forward
        if all || mask & 4 != 0 { d.nodeClass = target.nodeClass }
        if all || mask & 8 != 0 { d.browseName = target.browseName }
        if all || mask & 16 != 0 { d.displayName = target.displayName }
        if all || mask & 32 != 0, target.nodeClass == .object || target.nodeClass == .variable {
            d.typeDefinition = ExpandedNodeId(target.typeDefinition ?? .null)
        }
        return d
    }

    // MARK: TranslateBrowsePaths

    /// The nodes a browse path leads to (OPC 10000-4 §5.8.4): each element followed from every node reached so
    /// far; Bad_NoMatch where none is found, Bad_BrowseNameInvalid for an element without a name.
    public func translate(_ path: BrowsePath) -> BrowsePathResult {
        lock.withLock {
            guard nodes[path.startingNode] != nil else { return BrowsePathResult(statusCode: .badNodeIdUnknown) }
            let elements = path.relativePath.elements ?? []
            guard !elements.isEmpty else { return BrowsePathResult(statusCode: .badNothingToDo) }
            var current: [NodeId] = [path.startingNode]
            for (index, e) in elements.enumerated() {
                // Only the final element may have an empty name: then every target of its references is one of
                // the path's (OPC 10000-4 §7.26, RelativePath).
                let anyName = e.targetName.name?.isEmpty ?? true
                guard !anyName || index == elements.count - 1 else {
                    return BrowsePathResult(statusCode: .badBrowseNameInvalid)
                }
                var next: [NodeId] = []
                for id in current {
                    for r in nodes[id]?.references ?? [] where r.forward != e.isInverse {
                        if !e.referenceTypeId.isNull {
                            let matches =
                                r.type == e.referenceTypeId
                                || (e.includeSubtypes && subtype(r.type, of: e.referenceTypeId))
                            if !matches { continue }
                        }
                        if let t = nodes[r.target], anyName || t.browseName == e.targetName, !next.contains(t.id) {
                            next.append(t.id)
                        }
                    }
                }
                guard !next.isEmpty else { return BrowsePathResult(statusCode: .badNoMatch) }
                current = next
            }
            return BrowsePathResult(
                statusCode: .good,
                targets: current.map { BrowsePathTarget(targetId: ExpandedNodeId($0), remainingPathIndex: UInt32.max) })
        }
    }
}

/// The generated nodes (namespace 0's part and the DI model), decoded from their JSON lines.
enum GeneratedNodes {
    private struct Line: Decodable {
        var i: UInt32
        var n: UInt16?
        var c: Int32
        var b: String
        var bn: UInt16?
        var d: String?
        var de: String?
        var a: Bool?
        var s: Bool?
        var `in`: String?
        var dt: UInt32?
        var dn: UInt16?
        var vr: Int32?
        var ad: [UInt32]?
        var al: UInt8?
        var ms: Double?
        var en: UInt8?
        var v: String?
        var df: String?
        var r: [[UInt32]]
    }

    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    static func nodes(_ lines: String) throws -> [Node] {
        let decoder = JSONDecoder()
        var out: [Node] = []
        for text in lines.split(separator: "\n") {
            let line = try decoder.decode(Line.self, from: Data(text.utf8))
            let id = NodeId(line.i, namespace: line.n ?? 0)
            guard let nodeClass = NodeClass(rawValue: line.c) else {
                throw Invalid(description: "node class \(line.c)")
            }
            var node = Node(
                id: id, nodeClass: nodeClass, browseName: QualifiedName(namespace: line.bn ?? 0, line.b),
                displayName: LocalizedText(line.d ?? line.b), description: line.de.map { LocalizedText($0) })
            node.isAbstract = line.a
            node.symmetric = line.s
            node.inverseName = line.in.map { LocalizedText($0) }
            node.dataType = line.dt.map { NodeId($0, namespace: line.dn ?? 0) }
            node.valueRank = line.vr
            node.arrayDimensions = line.ad
            node.accessLevel = line.al
            node.minimumSamplingInterval = line.ms
            node.eventNotifier = line.en
            if nodeClass == .method { node.executable = true }
            if let v = line.v {
                guard let bytes = HexText.bytes(v) else { throw Invalid(description: "the value of \(id)") }
                node.value = DataValue(value: try Variant.decode(bytes))
            }
            if let df = line.df {
                guard let bytes = HexText.bytes(df) else { throw Invalid(description: "the definition of \(id)") }
                node.dataTypeDefinition = try Variant.decode(bytes)
            }
            node.references = try line.r.map { r in
                switch r.count {
                case 3: return Reference(NodeId(r[0]), NodeId(r[1]), forward: r[2] == 1)
                case 5:
                    guard let tn = UInt16(exactly: r[3]), let n = UInt16(exactly: r[4]) else {
                        throw Invalid(description: "a reference of \(id)")
                    }
                    return Reference(NodeId(r[0], namespace: tn), NodeId(r[1], namespace: n), forward: r[2] == 1)
                default: throw Invalid(description: "a reference of \(id)")
                }
            }
            out.append(node)
        }
        return out
    }
}
