#!/usr/bin/env python3
"""Golden bytes of a structure with optional fields and of a union, as asyncua 2.1.0 (PyPI) encodes them: its
server imports OPC 30010 AutoID's NodeSet2 (and DI's, which AutoID needs) from OPCFoundation/UA-Nodeset, makes
its Python classes from the DataTypes' Definitions, and encodes sample values (the structures' bodies, without
their ExtensionObject envelope, whose namespace index is asyncua's own). Run once; the output is committed as
companion-golden.json.

    python3 make_companion_golden.py /tmp/UA-Nodeset > companion-golden.json
"""
import asyncio
import datetime
import json
import logging
import sys

from asyncua import Server, ua
from asyncua.ua.ua_binary import struct_to_binary

logging.disable(logging.WARNING)


async def main(repo):
    server = Server()
    await server.init()
    await server.import_xml(repo + "/DI/Opc.Ua.Di.NodeSet2.xml")
    await server.import_xml(repo + "/AutoID/Opc.Ua.AutoID.NodeSet2.xml")
    await server.load_data_type_definitions()
    t = datetime.datetime(2026, 11, 28, 8, 30, 0, 250000, tzinfo=datetime.timezone.utc)
    uid = bytes.fromhex("E004015012345678")
    cases = []

    def add(name, kind, value, fields):
        cases.append({"name": name, "type": kind, "fields": fields, "hex": struct_to_binary(value).hex()})

    add("ScanSettings without its optional LocationType", "ScanSettings",
        ua.ScanSettings(Duration=1500.0, Cycles=3, DataAvailable=True),
        {"duration": 1500.0, "cycles": 3, "dataAvailable": True})
    add("ScanSettings with LocationType NAME (3)", "ScanSettings",
        ua.ScanSettings(Duration=0.0, Cycles=0, DataAvailable=False, LocationType=ua.LocationTypeEnumeration(3)),
        {"duration": 0.0, "cycles": 0, "dataAvailable": False, "locationType": 3})
    bytes_union = ua.ScanData()
    bytes_union.ByteString = uid
    add("ScanData, the ByteString field (SwitchField 1)", "ScanData", bytes_union, {"byteString": uid.hex()})
    text_union = ua.ScanData()
    text_union.String = "E004015012345678"
    add("ScanData, the String field (SwitchField 2)", "ScanData", text_union, {"string": "E004015012345678"})
    add("ScanData, no field (SwitchField 0)", "ScanData", ua.ScanData(), {})
    epc = ua.ScanDataEpc(PC=0x3000, UId=uid, XPC_W1=0, XPC_W2=0)
    epc_union = ua.ScanData()
    epc_union.Epc = epc
    add("ScanData, the Epc field (SwitchField 3)", "ScanData", epc_union, {"epc": {"pc": 0x3000, "uId": uid.hex()}})
    add("ScanResult (its optional Location absent)", "ScanResult",
        ua.ScanResult(CodeType="UID", ScanData=bytes_union, Timestamp=t),
        {"codeType": "UID", "byteString": uid.hex(), "timestamp": "2026-11-28T08:30:00.250Z"})
    name_union = ua.Location()
    name_union.Name = "Dock door 3"
    add("ScanResult with its optional Location (a union: Name, SwitchField 4)", "ScanResult",
        ua.ScanResult(CodeType="UID", ScanData=text_union, Timestamp=t, Location=name_union),
        {"codeType": "UID", "string": "E004015012345678", "timestamp": "2026-11-28T08:30:00.250Z",
         "location": "Dock door 3"})
    # asyncua builds a subtype from its NodeSet Definition alone: RfidScanResult gets Sighting only, without
    # ScanResult's fields, so it is not a fixture here (the vlogger generator puts the supertype's fields first).
    fields = [f.name for f in __import__("dataclasses").fields(ua.RfidScanResult)]
    from importlib.metadata import version
    print(json.dumps({"source": "asyncua %s; OPCFoundation/UA-Nodeset a2d4ae8, AutoID/Opc.Ua.AutoID.NodeSet2.xml"
                      % version("asyncua"), "cases": cases, "asyncuaRfidScanResultFields": fields}, indent=1))


asyncio.run(main(sys.argv[1]))
