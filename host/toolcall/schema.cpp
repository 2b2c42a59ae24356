// schema.cpp: reading tools and their parameter schemas, and validating values against them
// (docs/toolcall.md, "Tools and schemas").
#include "toolcall/schema.hpp"

#include <cstdlib>

#include "toolcall/numeric.hpp"

namespace needle::toolcall {

using json::Value;

const char* typeName(Type type) {
  switch (type) {
    case Type::Object: return "object";
    case Type::Array: return "array";
    case Type::String: return "string";
    case Type::Integer: return "integer";
    case Type::Number: return "number";
    case Type::Boolean: return "boolean";
    case Type::Null: return "null";
  }
  return "?";
}

std::vector<Value> Schema::allowedValues() const {
  if (constValue) return {*constValue};
  return enumValues;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

// A value for messages: its compact form, cut at 60 characters.
std::string shown(const Value& v) {
  std::string text = json::compact(v);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// "a string", "an integer", ... as the schema names its type.
std::string expectedName(Type type) {
  switch (type) {
    case Type::Object: return "an object";
    case Type::Array: return "an array";
    case Type::Integer: return "an integer";
    case Type::Null: return "null";
    default: return std::string("a ") + typeName(type);
  }
}

bool hasType(const Value& v, Type type) {
  switch (type) {
    case Type::Object: return v.isObject();
    case Type::Array: return v.isArray();
    case Type::String: return v.isString();
    case Type::Integer: return v.isNumber() && json::isIntegral(v.text);
    case Type::Number: return v.isNumber();
    case Type::Boolean: return v.isBool();
    case Type::Null: return v.isNull();
  }
  return false;
}

struct Violation {
  std::string path;  // "a.b[2]", empty for the root
  std::string what;
};

// Checks everything but the enum and const lists (used on enum values themselves).
bool checkKeywords(const Value& v, const Schema& s, const std::string& path, Violation* out);

bool check(const Value& v, const Schema& s, const std::string& path, Violation* out) {
  if (!hasType(v, s.type)) {
    if (s.type == Type::Integer && v.isNumber()) *out = {path, v.text + " is not an integer"};
    else *out = {path, "expected " + expectedName(s.type) + ", got " + json::kindName(v.kind)};
    return false;
  }
  if (s.constValue && !json::equal(v, *s.constValue)) {
    *out = {path, shown(v) + " is not the const value " + shown(*s.constValue)};
    return false;
  }
  if (s.hasEnum) {
    bool found = false;
    for (const Value& allowed : s.enumValues) found = found || json::equal(v, allowed);
    if (!found) {
      *out = {path, shown(v) + " is not one of the enum values"};
      return false;
    }
  }
  return checkKeywords(v, s, path, out);
}

bool checkKeywords(const Value& v, const Schema& s, const std::string& path, Violation* out) {
  switch (s.type) {
    case Type::String: {
      const size_t length = json::codePointCount(v.text);
      if (length < s.minLength) {
        *out = {path, "string has " + plural(length, "character") + ", fewer than minLength " +
                          std::to_string(s.minLength)};
        return false;
      }
      if (s.maxLength && length > *s.maxLength) {
        *out = {path, "string has " + plural(length, "character") + ", more than maxLength " +
                          std::to_string(*s.maxLength)};
        return false;
      }
      return true;
    }
    case Type::Integer:
    case Type::Number:
      if (s.minimum && json::compareNumbers(v.text, *s.minimum) < 0) {
        *out = {path, v.text + " is less than minimum " + *s.minimum};
        return false;
      }
      if (s.exclusiveMinimum && json::compareNumbers(v.text, *s.exclusiveMinimum) <= 0) {
        *out = {path, v.text + " is not greater than exclusiveMinimum " + *s.exclusiveMinimum};
        return false;
      }
      if (s.maximum && json::compareNumbers(v.text, *s.maximum) > 0) {
        *out = {path, v.text + " is greater than maximum " + *s.maximum};
        return false;
      }
      if (s.exclusiveMaximum && json::compareNumbers(v.text, *s.exclusiveMaximum) >= 0) {
        *out = {path, v.text + " is not less than exclusiveMaximum " + *s.exclusiveMaximum};
        return false;
      }
      return true;
    case Type::Array:
      if (v.items.size() < s.minItems) {
        *out = {path, "array has " + plural(v.items.size(), "item") + ", fewer than minItems " +
                          std::to_string(s.minItems)};
        return false;
      }
      if (s.maxItems && v.items.size() > *s.maxItems) {
        *out = {path, "array has " + plural(v.items.size(), "item") + ", more than maxItems " +
                          std::to_string(*s.maxItems)};
        return false;
      }
      for (size_t i = 0; i < v.items.size(); ++i)
        if (!check(v.items[i], s.item(), path + "[" + std::to_string(i) + "]", out)) return false;
      return true;
    case Type::Object:
      for (const json::Member& m : v.members) {
        const Property* property = nullptr;
        for (const Property& p : s.properties)
          if (p.name == m.name) property = &p;
        if (!property) {
          *out = {path, "unknown property " + json::quoteReadable(m.name)};
          return false;
        }
        if (!check(m.value, property->schema, path.empty() ? m.name : path + "." + m.name, out)) return false;
      }
      for (const Property& p : s.properties) {
        if (p.required && !v.find(p.name)) {
          *out = {path, "missing required property " + json::quoteReadable(p.name)};
          return false;
        }
      }
      return true;
    case Type::Boolean:
    case Type::Null: return true;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Reading schemas
// ---------------------------------------------------------------------------------------------

// Where a schema sits, for messages: `tool "x" parameters` or `tool "x" parameter "a.b[]"`.
struct Place {
  std::string tool;  // the tool's name
  std::string path;  // empty for the parameters object itself
  uint32_t level;    // objects and arrays from the parameters object (1) down

  std::string text() const {
    return "tool " + json::quoteReadable(tool) + (path.empty() ? " parameters" : " parameter " + json::quoteReadable(path));
  }
  [[noreturn]] void fail(const std::string& why) const { throw Error(text() + ": " + why); }
  Place child(const std::string& name) const { return {tool, path.empty() ? name : path + "." + name, level + 1}; }
  Place items() const { return {tool, path + "[]", level + 1}; }
};

const char* const kAnnotations[] = {"description", "title", "default", "examples"};
const char* const kObjectKeywords[] = {"properties", "required", "additionalProperties"};
const char* const kArrayKeywords[] = {"items", "minItems", "maxItems"};
const char* const kStringKeywords[] = {"enum", "const", "minLength", "maxLength"};
const char* const kNumberKeywords[] = {"enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
const char* const kScalarKeywords[] = {"enum", "const"};

template <size_t N>
bool among(const std::string& key, const char* const (&list)[N]) {
  for (const char* k : list)
    if (key == k) return true;
  return false;
}

// Whether `key` is a keyword of the subset for `type` (annotations and "type" included).
bool appliesTo(const std::string& key, Type type) {
  if (key == "type" || among(key, kAnnotations)) return true;
  switch (type) {
    case Type::Object: return among(key, kObjectKeywords);
    case Type::Array: return among(key, kArrayKeywords);
    case Type::String: return among(key, kStringKeywords);
    case Type::Integer:
    case Type::Number: return among(key, kNumberKeywords);
    case Type::Boolean:
    case Type::Null: return among(key, kScalarKeywords);
  }
  return false;
}

bool supportedAnywhere(const std::string& key) {
  for (Type t : {Type::Object, Type::Array, Type::String, Type::Integer, Type::Boolean})
    if (appliesTo(key, t)) return true;
  return false;
}

Type readType(const Value& schema, const Place& at) {
  const Value* type = schema.find("type");
  if (!type) at.fail("\"type\" is missing");
  if (type->isArray()) at.fail("\"type\" lists are not supported");
  if (!type->isString()) at.fail("\"type\" must be a string");
  for (Type t : {Type::Object, Type::Array, Type::String, Type::Integer, Type::Number, Type::Boolean, Type::Null})
    if (type->text == typeName(t)) return t;
  at.fail("type " + json::quoteReadable(type->text) + " is not supported");
}

// A count keyword: a non-negative integral number no larger than kMaxCount.
uint32_t readCount(const Value& v, const std::string& key, const Place& at) {
  if (!v.isNumber() || !json::isIntegral(v.text) || json::compareNumbers(v.text, "0") < 0)
    at.fail("\"" + key + "\" must be a non-negative integer");
  if (json::compareNumbers(v.text, std::to_string(kMaxCount)) > 0)
    at.fail("\"" + key + "\" " + v.text + " is larger than the limit " + std::to_string(kMaxCount));
  return static_cast<uint32_t>(std::strtod(v.text.c_str(), nullptr));  // exact: an integer <= 10^6
}

std::string readBound(const Value& v, const std::string& key, const Place& at) {
  if (v.isBool() && (key == "exclusiveMinimum" || key == "exclusiveMaximum"))
    at.fail("\"" + key + "\" must be a number (the boolean form of draft 4 is not supported)");
  if (!v.isNumber()) at.fail("\"" + key + "\" must be a number");
  return v.text;
}

Schema readSchema(const Value& v, const Place& at);

void readObjectKeywords(const Value& v, const Place& at, Schema* s) {
  if (const Value* additional = v.find("additionalProperties")) {
    if (!additional->isBool() || additional->boolean)
      at.fail("\"additionalProperties\" must be false (open objects are not supported)");
  }
  if (const Value* properties = v.find("properties")) {
    if (!properties->isObject()) at.fail("\"properties\" must be an object");
    if (properties->members.size() > kMaxProperties)
      at.fail("more than " + std::to_string(kMaxProperties) + " properties");
    for (const json::Member& m : properties->members) {
      if (!json::isValidUtf8(m.name)) at.fail("a property name is not valid UTF-8");
      s->properties.push_back(Property{m.name, readSchema(m.value, at.child(m.name)), false});
    }
  }
  if (const Value* required = v.find("required")) {
    if (!required->isArray()) at.fail("\"required\" must be an array of property names");
    for (const Value& name : required->items) {
      if (!name.isString()) at.fail("\"required\" must be an array of property names");
      Property* property = nullptr;
      for (Property& p : s->properties)
        if (p.name == name.text) property = &p;
      if (!property) at.fail("\"required\" lists " + json::quoteReadable(name.text) + ", which is not in \"properties\"");
      if (property->required) at.fail("\"required\" lists " + json::quoteReadable(name.text) + " twice");
      property->required = true;
    }
  }
}

void readArrayKeywords(const Value& v, const Place& at, Schema* s) {
  const Value* items = v.find("items");
  if (!items) at.fail("\"items\" is missing");
  if (items->isArray()) at.fail("\"items\" as an array (tuple form) is not supported");
  s->items.push_back(readSchema(*items, at.items()));
  if (const Value* n = v.find("minItems")) s->minItems = readCount(*n, "minItems", at);
  if (const Value* n = v.find("maxItems")) s->maxItems = readCount(*n, "maxItems", at);
  if (s->maxItems && s->minItems > *s->maxItems)
    at.fail("minItems " + std::to_string(s->minItems) + " is greater than maxItems " + std::to_string(*s->maxItems));
}

void readStringKeywords(const Value& v, const Place& at, Schema* s) {
  if (const Value* n = v.find("minLength")) s->minLength = readCount(*n, "minLength", at);
  if (const Value* n = v.find("maxLength")) s->maxLength = readCount(*n, "maxLength", at);
  if (s->maxLength && s->minLength > *s->maxLength)
    at.fail("minLength " + std::to_string(s->minLength) + " is greater than maxLength " +
            std::to_string(*s->maxLength));
}

void readNumberKeywords(const Value& v, const Place& at, Schema* s) {
  if (const Value* b = v.find("minimum")) s->minimum = readBound(*b, "minimum", at);
  if (const Value* b = v.find("maximum")) s->maximum = readBound(*b, "maximum", at);
  if (const Value* b = v.find("exclusiveMinimum")) s->exclusiveMinimum = readBound(*b, "exclusiveMinimum", at);
  if (const Value* b = v.find("exclusiveMaximum")) s->exclusiveMaximum = readBound(*b, "exclusiveMaximum", at);
  if (s->minimum && s->maximum && json::compareNumbers(*s->minimum, *s->maximum) > 0)
    at.fail("minimum " + *s->minimum + " is greater than maximum " + *s->maximum);
  // The grammar writes at most 16 integer digits (and 8 fraction digits for a number): some value
  // of that form must satisfy every bound. Enum and const values are written as given instead.
  const numeric::Range range = numeric::rangeOf(*s);
  if (range.lo > range.hi && !v.find("enum") && !v.find("const")) {
    if (s->type == Type::Integer) at.fail("no integer of at most 16 digits lies within the bounds");
    at.fail("no number of at most 16 integer and 8 fraction digits lies within the bounds");
  }
}

// "enum" and "const": values of the schema's type that satisfy its other keywords.
void readAllowedValues(const Value& v, const Place& at, Schema* s) {
  const auto checked = [&](const Value& value, const std::string& what) {
    if (!hasType(value, s->type)) at.fail(what + " " + shown(value) + " is not " + expectedName(s->type));
    Violation violation;
    if (!checkKeywords(value, *s, "", &violation))
      at.fail(what + " " + shown(value) + " does not satisfy the schema: " + violation.what);
    return value;
  };
  if (const Value* list = v.find("enum")) {
    if (!list->isArray()) at.fail("\"enum\" must be an array");
    if (list->items.empty()) at.fail("\"enum\" is empty");
    for (const Value& item : list->items) s->enumValues.push_back(checked(item, "enum value"));
    s->hasEnum = true;
  }
  if (const Value* value = v.find("const")) {
    s->constValue = checked(*value, "const value");
    if (s->hasEnum) {
      bool found = false;
      for (const Value& item : s->enumValues) found = found || json::equal(item, *value);
      if (!found) at.fail("\"const\" is not one of the \"enum\" values");
    }
  }
}

Schema readSchema(const Value& v, const Place& at) {
  if (!v.isObject()) at.fail(std::string("expected a schema object, got ") + json::kindName(v.kind));
  for (const json::Member& m : v.members)
    if (!supportedAnywhere(m.name)) at.fail(json::quoteReadable(m.name) + " is not supported");
  Schema s;
  s.type = readType(v, at);
  for (const json::Member& m : v.members)
    if (!appliesTo(m.name, s.type))
      at.fail(json::quoteReadable(m.name) + " does not apply to type " + typeName(s.type));
  if ((s.type == Type::Object || s.type == Type::Array) && at.level > kMaxNesting)
    at.fail("nested deeper than " + std::to_string(kMaxNesting) + " levels of objects and arrays");
  switch (s.type) {
    case Type::Object: readObjectKeywords(v, at, &s); break;
    case Type::Array: readArrayKeywords(v, at, &s); break;
    case Type::String: readStringKeywords(v, at, &s); break;
    case Type::Integer:
    case Type::Number: readNumberKeywords(v, at, &s); break;
    case Type::Boolean:
    case Type::Null: break;
  }
  readAllowedValues(v, at, &s);
  return s;
}

Tool readTool(const Value& v, size_t index, const std::vector<Tool>& earlier) {
  const std::string numbered = "tool " + std::to_string(index + 1);
  if (!v.isObject()) throw Error(numbered + ": expected an object, got " + json::kindName(v.kind));
  const Value* name = v.find("name");
  if (!name) throw Error(numbered + ": \"name\" is missing");
  if (!name->isString()) throw Error(numbered + ": \"name\" must be a string");
  if (name->text.empty()) throw Error(numbered + ": \"name\" is empty");
  if (!json::isValidUtf8(name->text)) throw Error(numbered + ": \"name\" is not valid UTF-8");
  for (size_t i = 0; i < earlier.size(); ++i)
    if (earlier[i].name == name->text)
      throw Error(numbered + ": the name " + json::quoteReadable(name->text) + " is already used by tool " +
                  std::to_string(i + 1));
  Tool tool;
  tool.name = name->text;
  tool.source = v;
  if (const Value* description = v.find("description")) {
    if (!description->isString())
      throw Error("tool " + json::quoteReadable(tool.name) + ": \"description\" must be a string");
    tool.description = description->text;
  }
  if (const Value* parameters = v.find("parameters")) {
    const Place at{tool.name, "", 1};
    tool.parameters = readSchema(*parameters, at);
    if (tool.parameters.type != Type::Object) at.fail("\"type\" must be \"object\"");
  }
  return tool;
}

}  // namespace

std::string validate(const Value& value, const Schema& schema) {
  Violation violation;
  if (check(value, schema, "", &violation)) return "";
  return (violation.path.empty() ? std::string("arguments") : "parameter " + json::quoteReadable(violation.path)) + ": " +
         violation.what;
}

std::vector<Tool> parseTools(const Value& tools) {
  if (!tools.isArray()) throw Error(std::string("tools: expected an array of tools, got ") + json::kindName(tools.kind));
  if (tools.items.size() > kMaxTools) throw Error("tools: more than " + std::to_string(kMaxTools) + " tools");
  std::vector<Tool> out;
  for (size_t i = 0; i < tools.items.size(); ++i) out.push_back(readTool(tools.items[i], i, out));
  return out;
}

std::vector<Tool> parseTools(std::string_view toolsJson) {
  json::ParseOptions options;
  options.source = "tools JSON";
  return parseTools(json::parse(toolsJson, options));
}

}  // namespace needle::toolcall
