#!/usr/bin/python3
"""Writes favor-server's OpenAPI 3.1 document (GET /openapi.json).

  make_openapi.py DESCRIPTOR_SET HAND_WRITTEN_YAML VERSION OUT_JSON OUT_CC

The document has two sources, each written once:
- HAND_WRITTEN_YAML (server/http/openapi/openapi.yaml): what has no other
  source: the info, OpenAI's routes and shapes, /health, /openapi.json,
  /docs, the errors, and the examples of every request;
- DESCRIPTOR_SET (protoc --include_source_info --descriptor_set_out of
  proto/favor/v1/favor.proto): one route POST /v1/favor/<Method> per RPC of
  favor.v1.Favor and one schema per message and enum, described by the
  proto's comments.

The schemas follow protobuf's proto3 JSON mapping as the server's codec
applies it (server/http/favor_json.cc, json_codec.cc): field names as in
the proto (snake_case: the server prints them so and also accepts
lowerCamelCase), 64-bit integers as decimal strings, enums by name, bytes as
base64, fields at their default value left out of answers (so no field is
required), unknown fields refused.

OUT_JSON is the document; OUT_CC a C++ source that embeds it
(openapi_document.h).
"""
import json
import sys

import yaml
from google.protobuf import descriptor_pb2

FDP = descriptor_pb2.FieldDescriptorProto
PACKAGE = "favor.v1"
SERVICE = "Favor"
PREFIX = PACKAGE + "."  # component names of the proto's schemas
ROUTE = "/v1/favor/"

INT64 = {"type": "string", "format": "int64", "pattern": "^-?[0-9]+$",
         "description": "a 64-bit integer as a decimal string (proto3 JSON)"}
UINT64 = {"type": "string", "format": "uint64", "pattern": "^[0-9]+$",
          "description": "a 64-bit integer as a decimal string (proto3 JSON)"}
SCALARS = {
    FDP.TYPE_DOUBLE: {"type": "number", "format": "double"},
    FDP.TYPE_FLOAT: {"type": "number", "format": "float"},
    FDP.TYPE_INT64: INT64, FDP.TYPE_SINT64: INT64, FDP.TYPE_SFIXED64: INT64,
    FDP.TYPE_UINT64: UINT64, FDP.TYPE_FIXED64: UINT64,
    FDP.TYPE_INT32: {"type": "integer", "format": "int32",
                     "minimum": -2**31, "maximum": 2**31 - 1},
    FDP.TYPE_SINT32: {"type": "integer", "format": "int32",
                      "minimum": -2**31, "maximum": 2**31 - 1},
    FDP.TYPE_SFIXED32: {"type": "integer", "format": "int32",
                        "minimum": -2**31, "maximum": 2**31 - 1},
    FDP.TYPE_UINT32: {"type": "integer", "format": "uint32",
                      "minimum": 0, "maximum": 2**32 - 1},
    FDP.TYPE_FIXED32: {"type": "integer", "format": "uint32",
                       "minimum": 0, "maximum": 2**32 - 1},
    FDP.TYPE_BOOL: {"type": "boolean"},
    FDP.TYPE_STRING: {"type": "string"},
    FDP.TYPE_BYTES: {"type": "string", "contentEncoding": "base64",
                     "description": "bytes in base64 (proto3 JSON)"},
}


class Comments:
    """The proto's comments, by descriptor path (descriptor.proto's
    SourceCodeInfo)."""

    def __init__(self, file):
        self.by_path = {}
        for location in file.source_code_info.location:
            text = location.leading_comments.strip()
            if text:
                self.by_path[tuple(location.path)] = " ".join(
                    line.strip() for line in text.splitlines())

    def of(self, *path):
        return self.by_path.get(tuple(path), "")


def described(schema, text):
    schema = dict(schema)
    parts = [p for p in (text, schema.get("description")) if p]
    if parts:
        schema["description"] = "; ".join(parts) if len(parts) > 1 else parts[0]
    return schema


def local_name(full_name):
    """'.favor.v1.EmbedRequest' -> 'favor.v1.EmbedRequest'."""
    name = full_name.lstrip(".")
    if not name.startswith(PREFIX):
        sys.exit(f"make_openapi: {name} is not in {PACKAGE}; the generator "
                 "handles favor.proto's own types only")
    return name


def ref(full_name):
    return {"$ref": "#/components/schemas/" + local_name(full_name)}


def enum_schema(enum, path, comments, scope):
    values = [v.name for v in enum.value]
    lines = [f"`{v.name}`: {comments.of(*path, 2, i)}"
             for i, v in enumerate(enum.value) if comments.of(*path, 2, i)]
    text = comments.of(*path)
    if lines:
        text = (text + "\n\n" if text else "") + "\n".join(
            "- " + line for line in lines)
    return scope + enum.name, {"type": "string", "enum": values,
                               "description": text}


def field_schema(field, maps):
    if field.type == FDP.TYPE_MESSAGE and field.type_name in maps:
        key, value = maps[field.type_name]
        return {"type": "object", "propertyNames": field_schema(key, {}),
                "additionalProperties": field_schema(value, {})}
    if field.type == FDP.TYPE_MESSAGE:
        single = ref(field.type_name)
    elif field.type == FDP.TYPE_ENUM:
        single = ref(field.type_name)
    else:
        single = dict(SCALARS[field.type])
        if field.type in (FDP.TYPE_INT64, FDP.TYPE_UINT64):
            single.pop("description")  # said once, on the field below
    if field.label == FDP.LABEL_REPEATED:
        return {"type": "array", "items": single}
    return single


def message_schemas(message, path, comments, scope, out):
    """`message` (and what it nests) into `out`, by component name."""
    name = scope + message.name
    maps = {}
    for i, nested in enumerate(message.nested_type):
        if nested.options.map_entry:
            maps["." + name + "." + nested.name] = (nested.field[0],
                                                   nested.field[1])
        else:
            message_schemas(nested, path + (3, i), comments,
                            name + ".", out)
    for i, enum in enumerate(message.enum_type):
        key, schema = enum_schema(enum, path + (4, i), comments, name + ".")
        out[key] = schema
    properties = {}
    for i, field in enumerate(message.field):
        schema = field_schema(field, maps)
        text = comments.of(*path, 2, i)
        if field.HasField("oneof_index") and not field.proto3_optional:
            group = message.oneof_decl[field.oneof_index].name
            text = (text + " " if text else "") + (
                f"(One of `{group}`: at most one of its fields is set.)")
        if field.type in (FDP.TYPE_INT64, FDP.TYPE_UINT64, FDP.TYPE_SINT64,
                          FDP.TYPE_FIXED64, FDP.TYPE_SFIXED64):
            text = (text + " " if text else "") + (
                "(64-bit: a decimal string in JSON.)")
        if "$ref" in schema:
            # 3.1 allows siblings of $ref; Swagger UI shows the description.
            schema = dict(schema)
        properties[field.name] = described(schema, text)
    out[name] = {
        "type": "object",
        "description": comments.of(*path),
        "properties": properties,
        "additionalProperties": False,
    }


def proto_components(file):
    comments = Comments(file)
    schemas = {}
    scope = PREFIX
    for i, enum in enumerate(file.enum_type):
        key, schema = enum_schema(enum, (5, i), comments, scope)
        schemas[key] = schema
    for i, message in enumerate(file.message_type):
        message_schemas(message, (4, i), comments, scope, schemas)
    for schema in schemas.values():
        if not schema.get("description"):
            schema.pop("description", None)
    return comments, schemas


def favor_paths(file, comments, hand):
    """POST /v1/favor/<Method> for every RPC; the template and the examples
    are the hand-written part's."""
    template = hand.pop("x-favor-method")
    examples = hand.pop("x-favor-method-examples")
    streaming = hand.pop("x-favor-streaming-method")
    services = [s for s in file.service if s.name == SERVICE]
    if len(services) != 1:
        sys.exit(f"make_openapi: no service {SERVICE} in the descriptor set")
    paths = {}
    for m, method in enumerate(services[0].method):
        text = comments.of(6, 0, 2, m)
        if method.client_streaming or method.server_streaming:
            operation = json.loads(json.dumps(streaming))
            operation["description"] = (text + "\n\n" +
                                        operation["description"])
        else:
            if method.name not in examples:
                sys.exit(f"make_openapi: the hand-written part has no "
                         f"example of {method.name} (x-favor-method-examples)")
            operation = json.loads(json.dumps(template))
            operation["description"] = text
            body = operation["requestBody"]["content"]["application/json"]
            body["schema"] = ref(method.input_type)
            body["examples"] = examples.pop(method.name)
            ok = operation["responses"]["200"]["content"]["application/json"]
            ok["schema"] = ref(method.output_type)
        operation["operationId"] = "Favor_" + method.name
        operation["summary"] = f"favor.v1.Favor/{method.name} as JSON"
        paths[ROUTE + method.name] = {"post": operation}
    if examples:
        sys.exit("make_openapi: examples of methods favor.v1.Favor does not "
                 f"have: {sorted(examples)}")
    return paths


def add_to_every_operation(document, common):
    """The hand-written part's x-favor-every-operation: `parameters` and
    `responses` (where its status is not listed yet) added to every
    operation but those marked `x-favor-every-operation: false`, and
    `response_headers` to every response (those of components.responses,
    and the others)."""
    parameters = common.get("parameters") or []
    statuses = common.get("responses") or {}
    headers = common.get("response_headers") or {}
    responses = list(document["components"].get("responses", {}).values())
    for item in document["paths"].values():
        for operation in item.values():
            if operation.pop("x-favor-every-operation", True):
                operation.setdefault("parameters", []).extend(
                    json.loads(json.dumps(parameters)))
                for status, response in statuses.items():
                    operation["responses"].setdefault(
                        status, json.loads(json.dumps(response)))
            if not operation.get("parameters", True):
                del operation["parameters"]
            responses += [r for r in operation["responses"].values()
                          if "$ref" not in r]
    for response in responses:
        if headers:
            response.setdefault("headers", {}).update(
                json.loads(json.dumps(headers)))


def document(descriptor_set_path, hand_path, version):
    files = descriptor_pb2.FileDescriptorSet()
    with open(descriptor_set_path, "rb") as f:
        files.ParseFromString(f.read())
    favor = [f for f in files.file if f.package == PACKAGE]
    if len(favor) != 1:
        sys.exit(f"make_openapi: expected one file of package {PACKAGE}")
    with open(hand_path) as f:
        hand = yaml.safe_load(f)
    hand["info"]["version"] = version
    comments, schemas = proto_components(favor[0])
    clash = set(schemas) & set(hand["components"]["schemas"])
    if clash:
        sys.exit(f"make_openapi: schemas defined twice: {sorted(clash)}")
    hand["components"]["schemas"].update(schemas)
    generated = favor_paths(favor[0], comments, hand)
    clash = set(generated) & set(hand["paths"])
    if clash:
        sys.exit(f"make_openapi: paths defined twice: {sorted(clash)}")
    hand["paths"].update(generated)
    add_to_every_operation(hand, hand.pop("x-favor-every-operation") or {})
    return hand


CC = """// Generated by server/http/openapi/make_openapi.py from
// server/http/openapi/openapi.yaml and proto/favor/v1/favor.proto: do not
// edit.
#include "server/http/openapi_document.h"

namespace favor::http {{
namespace {{

constexpr char kDocument[] =
{chunks};

}}  // namespace

absl::string_view OpenApiDocument() {{
  return absl::string_view(kDocument, sizeof(kDocument) - 1);
}}

}}  // namespace favor::http
"""


def cc_source(text):
    data = text.encode("utf-8")
    # Adjacent string literals of at most 4 KB each (compilers limit one
    # literal's length); every byte outside printable ASCII, and the quote
    # and backslash, escaped in octal.
    chunks = []
    for start in range(0, len(data), 4096):
        piece = []
        for byte in data[start:start + 4096]:
            if 32 <= byte < 127 and byte not in (ord('"'), ord("\\"), ord("?")):
                piece.append(chr(byte))
            else:
                piece.append("\\%03o" % byte)
        chunks.append('    "' + "".join(piece) + '"')
    return CC.format(chunks="\n".join(chunks))


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    descriptor_set, hand, version, out_json, out_cc = sys.argv[1:]
    text = json.dumps(document(descriptor_set, hand, version), indent=1,
                      ensure_ascii=False) + "\n"
    with open(out_json, "w") as f:
        f.write(text)
    with open(out_cc, "w") as f:
        f.write(cc_source(text))


if __name__ == "__main__":
    main()
