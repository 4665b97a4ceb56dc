"""Golden bytes of OPC UA Binary from an encoder nobody here wrote: Python asyncua (PyPI), for OPCUATests.

Each case is a value built with asyncua's types and encoded by asyncua's ua_binary; OPCUATests builds the same
value with the OPCUA target and expects the same bytes, and decodes these bytes back to that value.

    python3 -m venv /tmp/uavenv && /tmp/uavenv/bin/pip install asyncua==2.1.0
    /tmp/uavenv/bin/python Tests/OPCUATests/Fixtures/make_golden.py > Tests/OPCUATests/Fixtures/asyncua-golden.json

DataValue cases leave the picoseconds out: asyncua 2.1.0 writes the fields in its dataclass's order (source and
server timestamps, then both picoseconds) where OPC 10000-6 §5.2.2.17 (Table 16 in 1.04, 27 in 1.05) puts each
picoseconds after its timestamp; the test checks that order against the spec's table.
DiagnosticInfo cases leave Locale and LocalizedText out: asyncua 2.1.0 numbers DiagnosticInfo's mask bits in
field order (Locale 0x04, LocalizedText 0x08), where OPC 10000-6 §5.2.2.12 gives LocalizedText 0x04 and Locale
0x08 (node-opcua's DiagnosticInfo_EncodingByte and the Rust opcua crate agree with the spec); and it types
InnerDiagnosticInfo as an ExtensionObject, so it cannot encode a nested one. The test checks those against the
spec's table instead.
"""
import json
import uuid
from datetime import datetime, timezone
from importlib.metadata import version

from asyncua import ua
from asyncua.ua import ua_binary as b

V = ua.VariantType
cases = []


def add(name, kind, data):
    cases.append({"name": name, "kind": kind, "hex": data.hex()})


def variant(name, value, vtype, **kw):
    add(name, "variant", b.variant_to_binary(ua.Variant(value, vtype, **kw)))


variant("boolean", True, V.Boolean)
variant("sbyte", -5, V.SByte)
variant("byte", 200, V.Byte)
variant("int16", -30000, V.Int16)
variant("uint16", 60000, V.UInt16)
variant("int32", -2000000000, V.Int32)
variant("uint32", 4000000000, V.UInt32)
variant("int64", -9000000000000000000, V.Int64)
variant("uint64", 18000000000000000000, V.UInt64)
variant("float", 1.5, V.Float)
variant("double", -2.25, V.Double)
variant("string", "Kühlraum 12", V.String)
variant("string-null", None, V.String)
variant("datetime", datetime(2026, 11, 28, 8, 30, 0, 250000, tzinfo=timezone.utc), V.DateTime)
variant("guid", uuid.UUID("72962B91-FA75-4AE6-8D28-B404DC7DAF63"), V.Guid)
variant("bytestring", b"\x01\x02\xff", V.ByteString)
variant("xmlelement", ua.XmlElement("<a/>"), V.XmlElement)
variant("nodeid-twobyte", ua.NodeId(85, 0, ua.NodeIdType.TwoByte), V.NodeId)
variant("nodeid-fourbyte", ua.NodeId(1025, 2, ua.NodeIdType.FourByte), V.NodeId)
variant("nodeid-numeric", ua.NodeId(70000, 3, ua.NodeIdType.Numeric), V.NodeId)
variant("nodeid-string", ua.NodeId("Dock.Reader", 2, ua.NodeIdType.String), V.NodeId)
variant(
    "nodeid-guid", ua.NodeId(uuid.UUID("72962B91-FA75-4AE6-8D28-B404DC7DAF63"), 4, ua.NodeIdType.Guid), V.NodeId)
variant("nodeid-bytestring", ua.NodeId(b"\xde\xad", 5, ua.NodeIdType.ByteString), V.NodeId)
variant(
    "expandednodeid",
    ua.ExpandedNodeId(1025, 0, ua.NodeIdType.FourByte, "urn:vlogger:gateway", 2),
    V.ExpandedNodeId)
variant("statuscode", ua.StatusCode(0x80AB0000), V.StatusCode)
variant("qualifiedname", ua.QualifiedName("Reader", 2), V.QualifiedName)
variant("localizedtext", ua.LocalizedText("Leser", "de-DE"), V.LocalizedText)
variant("localizedtext-textonly", ua.LocalizedText("only text"), V.LocalizedText)
variant(
    "extensionobject-argument",
    ua.Argument(Name="Block", DataType=ua.NodeId(3), ValueRank=-1, Description=ua.LocalizedText("first block")),
    V.ExtensionObject)
variant("array-int32", [1, 2, 3], V.Int32)
variant("matrix-int32", [[1, 2, 3], [4, 5, 6]], V.Int32, Dimensions=[2, 3])
variant("array-string", ["a", None, "ü"], V.String)
variant("array-variant", [ua.Variant(1, V.Int32), ua.Variant("a", V.String)], V.Variant)
variant("null", None, V.Null)

dv = ua.DataValue(
    Value=ua.Variant(21.5, V.Double),
    StatusCode=ua.StatusCode(0x408F0000),
    SourceTimestamp=datetime(2026, 11, 28, 8, 30, 0, 250000, tzinfo=timezone.utc),
    ServerTimestamp=datetime(2026, 11, 28, 8, 30, 1, tzinfo=timezone.utc),
)
add("datavalue-full", "datavalue", b.struct_to_binary(dv))
add("datavalue-value", "datavalue", b.struct_to_binary(ua.DataValue(Value=ua.Variant(7, V.UInt16), StatusCode=None)))
variant("variant-datavalue", dv, V.DataValue)

di = ua.DiagnosticInfo(
    SymbolicId=1, NamespaceURI=2, AdditionalInfo="dock door", InnerStatusCode=ua.StatusCode(0x80AB0000))
add("diagnosticinfo", "diagnosticinfo", b.struct_to_binary(di))

# Service requests and responses as a message body carries them (OPC 10000-6 §7.1.2 and §5.2.2.15: the NodeId of
# the type's DefaultBinary encoding, then its fields; asyncua keeps that NodeId as the dataclass's TypeId field),
# and a structure in its ExtensionObject envelope: the generated types of Opc.Ua.Types.bsd.
T0 = datetime(2026, 11, 28, 8, 30, 0, 250000, tzinfo=timezone.utc)
header = ua.RequestHeader(AuthenticationToken=ua.NodeId(b"\x01\x02", 0, ua.NodeIdType.ByteString), Timestamp=T0,
                          RequestHandle=7, ReturnDiagnostics=0, AuditEntryId=None, TimeoutHint=10000)
read = ua.ReadRequest(RequestHeader=header, Parameters=ua.ReadParameters(
    MaxAge=0.0, TimestampsToReturn=ua.TimestampsToReturn.Both,
    NodesToRead=[ua.ReadValueId(NodeId=ua.NodeId(2259, 0), AttributeId=13),
                 ua.ReadValueId(NodeId=ua.NodeId("Dock.Reader", 2), AttributeId=4,
                                IndexRange=None, DataEncoding=ua.QualifiedName(None, 0))]))
add("readrequest", "service", b.struct_to_binary(read))
opn = ua.OpenSecureChannelRequest(RequestHeader=header, Parameters=ua.OpenSecureChannelParameters(
    ClientProtocolVersion=0, RequestType=ua.SecurityTokenRequestType.Issue,
    SecurityMode=ua.MessageSecurityMode.None_, ClientNonce=b"", RequestedLifetime=3600000))
add("opensecurechannelrequest", "service", b.struct_to_binary(opn))
session = ua.CreateSessionRequest(RequestHeader=header, Parameters=ua.CreateSessionParameters(
    ClientDescription=ua.ApplicationDescription(
        ApplicationUri="urn:example:client", ProductUri="urn:example", ApplicationName=ua.LocalizedText("client", "en"),
        ApplicationType=ua.ApplicationType.Client, DiscoveryUrls=["opc.tcp://client:4841"]),
    ServerUri=None, EndpointUrl="opc.tcp://127.0.0.1:4840", SessionName="asyncua", ClientNonce=bytes(range(32)),
    ClientCertificate=None, RequestedSessionTimeout=3600000.0, MaxResponseMessageSize=0))
add("createsessionrequest", "service", b.struct_to_binary(session))
browse = ua.BrowseResponse(ResponseHeader=ua.ResponseHeader(Timestamp=T0, RequestHandle=7), Results=[ua.BrowseResult(
    StatusCode=ua.StatusCode(0), ContinuationPoint=b"\x05",
    References=[ua.ReferenceDescription(
        ReferenceTypeId=ua.NodeId(35), IsForward=True, NodeId=ua.ExpandedNodeId(2253),
        BrowseName=ua.QualifiedName("Server", 0), DisplayName=ua.LocalizedText("Server"),
        NodeClass=ua.NodeClass.Object, TypeDefinition=ua.ExpandedNodeId(2004))])])
add("browseresponse", "service", b.struct_to_binary(browse))
add("euinformation", "structure", b.extensionobject_to_binary(ua.EUInformation(
    NamespaceUri="http://www.opcfoundation.org/UA/units/un/cefact", UnitId=4408652,
    DisplayName=ua.LocalizedText("°C"), Description=ua.LocalizedText("degree Celsius"))))

# Secure-conversation chunks of policy None (OPC 10000-6 §6.7.2), as asyncua's SecureConnection writes them: the
# OPN of the request above (sequence number 1), then a 20,480-byte MSG body cut for an 8,192-byte buffer
# (channel 5, token 9, request 2: three chunks numbered 2, 3, 4).
from asyncua.common.connection import SecureConnection, TransportLimits  # noqa: E402
from asyncua.crypto.security_policies import SecurityPolicyNone  # noqa: E402

conn = SecureConnection(SecurityPolicyNone(), TransportLimits(max_recv_buffer=8192, max_send_buffer=8192))
add("opn-chunk", "chunks", conn.message_to_binary(b.struct_to_binary(opn), ua.MessageType.SecureOpen, request_id=1))
conn.security_token.ChannelId = 5
conn.security_token.TokenId = 9
add("msg-chunks", "chunks", conn.message_to_binary(bytes(range(256)) * 80, ua.MessageType.SecureMessage, request_id=2))

# UA-TCP messages, header included (OPC 10000-6 §7.1.2).
add("hello", "hello", b.uatcp_to_binary(ua.MessageType.Hello, ua.Hello(
    ProtocolVersion=0, ReceiveBufferSize=65536, SendBufferSize=65536, MaxMessageSize=0, MaxChunkCount=0,
    EndpointUrl="opc.tcp://127.0.0.1:4840")))
hello = ua.Hello()  # asyncua's own defaults: 2**31 - 1 for the sizes and limits
hello.EndpointUrl = "opc.tcp://gateway.plant.example:4840/vlogger"
add("hello-asyncua-defaults", "hello", b.uatcp_to_binary(ua.MessageType.Hello, hello))
add("acknowledge", "acknowledge", b.uatcp_to_binary(ua.MessageType.Acknowledge, ua.Acknowledge(
    ProtocolVersion=0, ReceiveBufferSize=65536, SendBufferSize=65536, MaxMessageSize=4194304, MaxChunkCount=64)))
add("error", "error", b.uatcp_to_binary(ua.MessageType.Error, ua.ErrorMessage(
    Error=ua.StatusCode(0x80800000), Reason="too large")))

print(json.dumps({"source": f"asyncua {version('asyncua')} (PyPI), ua_binary", "cases": cases}, indent=1))
