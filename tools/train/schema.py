"""A small JSON Schema validator for tool calls (the subset our tools use; docs/training-data.md).

validate(value, schema) returns None or the first violation as text, with its path. validate_call
checks a whole call against the offered tools: the tool exists, the arguments are an object whose keys
are the tool's properties (no others), every required key is there, and every value fits its schema.
check_tool checks a tool definition itself: the keys, their order and the keywords we support.
"""

import json

SUPPORTED_KEYWORDS = {
    "object": {"type", "properties", "required", "additionalProperties", "description"},
    "string": {"type", "enum", "description", "minLength", "maxLength"},
    "integer": {"type", "enum", "description", "minimum", "maximum"},
    "number": {"type", "enum", "description", "minimum", "maximum"},
    "boolean": {"type", "description"},
    "array": {"type", "items", "description", "minItems", "maxItems"},
}


def _type_ok(value, t):
    if t == "string":
        return isinstance(value, str)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "null":
        return value is None
    raise ValueError(f"unknown schema type {t!r}")


def validate(value, schema, path="$"):
    """None if `value` satisfies `schema`, else a message naming the path and the violation."""
    t = schema.get("type")
    if t is not None and not _type_ok(value, t):
        return f"{path}: expected {t}, got {json.dumps(value, ensure_ascii=False)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path}: {json.dumps(value, ensure_ascii=False)} is not one of {schema['enum']}"
    if "minimum" in schema and value < schema["minimum"]:
        return f"{path}: {value} is below the minimum {schema['minimum']}"
    if "maximum" in schema and value > schema["maximum"]:
        return f"{path}: {value} is above the maximum {schema['maximum']}"
    if "minLength" in schema and len(value) < schema["minLength"]:
        return f"{path}: shorter than {schema['minLength']} characters"
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        return f"{path}: longer than {schema['maxLength']} characters"
    if t == "object":
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                return f"{path}: required key {key!r} is missing"
        for key, item in value.items():
            if key not in props:
                return f"{path}: key {key!r} is not a property"
            err = validate(item, props[key], f"{path}.{key}")
            if err:
                return err
    if t == "array":
        if "minItems" in schema and len(value) < schema["minItems"]:
            return f"{path}: fewer than {schema['minItems']} items"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{path}: more than {schema['maxItems']} items"
        for i, item in enumerate(value):
            err = validate(item, schema.get("items", {}), f"{path}[{i}]")
            if err:
                return err
    return None


def validate_call(call, tools):
    """None if `call` ({"name", "arguments"}) is a valid call of one of `tools`, else why not."""
    if not isinstance(call, dict) or list(call) != ["name", "arguments"]:
        return f"call {call!r}: keys must be exactly name, arguments"
    by_name = {t["name"]: t for t in tools}
    tool = by_name.get(call["name"])
    if tool is None:
        return f"call names {call['name']!r}, which is not an offered tool"
    err = validate(call["arguments"], tool["parameters"], f"{call['name']}.arguments")
    if err:
        return err
    order = list(tool["parameters"]["properties"])
    keys = list(call["arguments"])
    if keys != sorted(keys, key=order.index):
        return f"{call['name']}.arguments: keys {keys} are not in the order of the properties {order}"
    return None


def check_tool(tool):
    """None if `tool` is a well-formed tool definition with only supported keywords, else why not."""
    if list(tool) != ["name", "description", "parameters"]:
        return f"tool keys {list(tool)} are not name, description, parameters"
    name = tool["name"]
    params = tool["parameters"]
    if list(params)[:2] != ["type", "properties"] or params["type"] != "object":
        return f"tool {name!r}: parameters must start with type object, properties"
    for key in params.get("required", []):
        if key not in params["properties"]:
            return f"tool {name!r}: required key {key!r} is not a property"
    for pname, p in params["properties"].items():
        t = p.get("type")
        if t not in SUPPORTED_KEYWORDS:
            return f"tool {name!r} parameter {pname!r}: type {t!r} is not supported"
        extra = set(p) - SUPPORTED_KEYWORDS[t]
        if extra:
            return f"tool {name!r} parameter {pname!r}: {sorted(extra)[0]!r} is not supported"
        for v in p.get("enum", []):
            if not _type_ok(v, t):
                return f"tool {name!r} parameter {pname!r}: enum value {v!r} is not a {t}"
    return None
