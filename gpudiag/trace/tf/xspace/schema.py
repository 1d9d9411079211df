"""The XSpace protobuf schema (TensorFlow/JAX/XLA profiler ``.xplane.pb``) as protobuf messages.

The profilers write ``tensorflow.profiler.XSpace`` (``tsl/profiler/protobuf/xplane.proto``,
Apache-2.0). Its generated module ships only inside TensorFlow, which ``gpudiag analyze`` must
not import, so the same schema is declared here, field for field, and protobuf's own runtime
(upb) builds the message classes from it: decoding is the protobuf library's, not ours.

The messages live in a private descriptor pool under the package ``gpudiag.xspace``, so they
never clash with TensorFlow's registration of the same file in a training process; the wire
format depends only on field numbers and types, which are those of the upstream schema.

    from gpudiag.trace.tf.xspace.schema import XSpace
    space = XSpace()
    space.ParseFromString(open("host.xplane.pb", "rb").read())
    for plane in space.planes: ...

Tests build profiles of any shape with the same classes.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "gpudiag.xspace"

_OPT = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
_REP = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
_T = descriptor_pb2.FieldDescriptorProto
INT64, UINT64, DOUBLE = _T.TYPE_INT64, _T.TYPE_UINT64, _T.TYPE_DOUBLE
STRING, BYTES, MESSAGE = _T.TYPE_STRING, _T.TYPE_BYTES, _T.TYPE_MESSAGE

# (message, [(field, number, type, label, message type or "", oneof index or None)])
# Field numbers and types are upstream's (xplane.proto); they are the wire format.
_SCHEMA: list[tuple[str, list[tuple[str, int, int, int, str, int | None]]]] = [
    (
        "XSpace",
        [
            ("planes", 1, MESSAGE, _REP, "XPlane", None),
            ("errors", 2, STRING, _REP, "", None),
            ("warnings", 3, STRING, _REP, "", None),
            ("hostnames", 4, STRING, _REP, "", None),
        ],
    ),
    # The same wire format with each plane left serialized: a reader decodes one plane at a
    # time instead of holding every plane's messages at once.
    ("XSpacePlanes", [("planes", 1, BYTES, _REP, "", None)]),
    (
        "XPlane",
        [
            ("id", 1, INT64, _OPT, "", None),
            ("name", 2, STRING, _OPT, "", None),
            ("lines", 3, MESSAGE, _REP, "XLine", None),
            ("event_metadata", 4, MESSAGE, _REP, "XPlane.EventMetadataEntry", None),
            ("stat_metadata", 5, MESSAGE, _REP, "XPlane.StatMetadataEntry", None),
            ("stats", 6, MESSAGE, _REP, "XStat", None),
        ],
    ),
    (
        "XLine",
        [
            ("id", 1, INT64, _OPT, "", None),
            ("display_id", 10, INT64, _OPT, "", None),
            ("name", 2, STRING, _OPT, "", None),
            ("display_name", 11, STRING, _OPT, "", None),
            ("timestamp_ns", 3, INT64, _OPT, "", None),
            ("duration_ps", 9, INT64, _OPT, "", None),
            ("events", 4, MESSAGE, _REP, "XEvent", None),
        ],
    ),
    (
        "XEvent",
        [
            ("metadata_id", 1, INT64, _OPT, "", None),
            ("offset_ps", 2, INT64, _OPT, "", 0),
            ("num_occurrences", 5, INT64, _OPT, "", 0),
            ("duration_ps", 3, INT64, _OPT, "", None),
            ("stats", 4, MESSAGE, _REP, "XStat", None),
        ],
    ),
    (
        "XStat",
        [
            ("metadata_id", 1, INT64, _OPT, "", None),
            ("double_value", 2, DOUBLE, _OPT, "", 0),
            ("uint64_value", 3, UINT64, _OPT, "", 0),
            ("int64_value", 4, INT64, _OPT, "", 0),
            ("str_value", 5, STRING, _OPT, "", 0),
            ("bytes_value", 6, BYTES, _OPT, "", 0),
            ("ref_value", 7, UINT64, _OPT, "", 0),
        ],
    ),
    # The same wire format with each line left serialized: a reader holds the file's
    # metadata decoded and decodes one line's events at a time.
    ("XSpaceLines", [("planes", 1, MESSAGE, _REP, "XPlaneLines", None)]),
    (
        "XPlaneLines",
        [
            ("id", 1, INT64, _OPT, "", None),
            ("name", 2, STRING, _OPT, "", None),
            ("lines", 3, BYTES, _REP, "", None),
            ("event_metadata", 4, MESSAGE, _REP, "XPlaneLines.EventMetadataEntry", None),
            ("stat_metadata", 5, MESSAGE, _REP, "XPlaneLines.StatMetadataEntry", None),
            ("stats", 6, MESSAGE, _REP, "XStat", None),  # the device's: compute capability
        ],
    ),
    # A line's names, its events left as unknown fields (not decoded).
    (
        "XLineHead",
        [
            ("id", 1, INT64, _OPT, "", None),
            ("display_id", 10, INT64, _OPT, "", None),
            ("name", 2, STRING, _OPT, "", None),
            ("display_name", 11, STRING, _OPT, "", None),
        ],
    ),
    (
        "XEventMetadata",
        [
            ("id", 1, INT64, _OPT, "", None),
            ("name", 2, STRING, _OPT, "", None),
            ("display_name", 4, STRING, _OPT, "", None),
            ("metadata", 3, BYTES, _OPT, "", None),
            ("stats", 5, MESSAGE, _REP, "XStat", None),
            ("child_id", 6, INT64, _REP, "", None),
        ],
    ),
    (
        "XStatMetadata",
        [
            ("id", 1, INT64, _OPT, "", None),
            ("name", 2, STRING, _OPT, "", None),
            ("description", 3, STRING, _OPT, "", None),
        ],
    ),
]
_ONEOFS = {"XEvent": "data", "XStat": "value"}
_METADATA_MAPS = [("EventMetadataEntry", "XEventMetadata"), ("StatMetadataEntry", "XStatMetadata")]
_MAPS = {"XPlane": _METADATA_MAPS, "XPlaneLines": _METADATA_MAPS}


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(
        name="gpudiag/xspace/xplane.proto", package=PACKAGE, syntax="proto3"
    )
    for name, fields in _SCHEMA:
        msg = fd.message_type.add(name=name)
        if name in _ONEOFS:
            msg.oneof_decl.add(name=_ONEOFS[name])
        for entry, value_type in _MAPS.get(name, []):
            nested = msg.nested_type.add(name=entry)
            nested.options.map_entry = True
            nested.field.add(name="key", number=1, type=INT64, label=_OPT, json_name="key")
            nested.field.add(
                name="value",
                number=2,
                type=MESSAGE,
                label=_OPT,
                type_name=f".{PACKAGE}.{value_type}",
                json_name="value",
            )
        for fname, number, ftype, label, type_name, oneof in fields:
            field = msg.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                field.type_name = f".{PACKAGE}.{type_name}"
            if oneof is not None:
                field.oneof_index = oneof
    return fd


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())


def _message(name: str) -> Any:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{PACKAGE}.{name}"))


XSpace = _message("XSpace")
XSpacePlanes = _message("XSpacePlanes")
XSpaceLines = _message("XSpaceLines")
XLineHead = _message("XLineHead")
XPlane = _message("XPlane")
XLine = _message("XLine")
XEvent = _message("XEvent")
XStat = _message("XStat")
XEventMetadata = _message("XEventMetadata")
XStatMetadata = _message("XStatMetadata")
