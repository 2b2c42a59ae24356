// schema.hpp: tools as given by the caller (a JSON array of {name, description, parameters}), read
// into validated Tool structs, and a validator of values against a parameter schema
// (docs/toolcall.md, "Tools and schemas").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "json.hpp"

namespace needle::toolcall {

enum class Type : uint8_t { Object, Array, String, Integer, Number, Boolean, Null };
// "object", "array", "string", "integer", "number", "boolean", "null".
const char* typeName(Type type);

struct Property;

// One parameter schema, in the supported subset of JSON Schema. Annotations (description, title,
// default, examples) are accepted and not kept.
struct Schema {
  Type type = Type::Object;
  // Object: the properties in input order. Objects are closed: no other key is allowed, as if
  // additionalProperties were false.
  std::vector<Property> properties;
  // String: length in code points.
  uint32_t minLength = 0;
  std::optional<uint32_t> maxLength;
  // Integer and Number: bounds as the JSON number literals written (exact, never rounded).
  std::optional<std::string> minimum, maximum, exclusiveMinimum, exclusiveMaximum;
  // Array: the one item schema (a vector only because Schema is incomplete here), and the counts.
  std::vector<Schema> items;
  uint32_t minItems = 0;
  std::optional<uint32_t> maxItems;
  // String, Integer, Number, Boolean, Null: "enum" (non-empty) and "const"; each value has the type
  // and satisfies the other keywords.
  std::vector<json::Value> enumValues;
  std::optional<json::Value> constValue;
  bool hasEnum = false;

  const Schema& item() const { return items.front(); }
  // The values a finite schema allows: {const} when there is one, else the enum; empty = no such list.
  std::vector<json::Value> allowedValues() const;
};

struct Property {
  std::string name;
  Schema schema;
  bool required = false;
};

struct Tool {
  std::string name;
  std::string description;
  Schema parameters;  // always an object schema; a tool without "parameters" takes {}
  json::Value source; // the tool object as given, rendered into the prompt
};

// Limits that keep the call grammar's state small (docs/toolcall.md, "Limits").
constexpr uint32_t kMaxProperties = 64;  // per object
constexpr uint32_t kMaxNesting = 10;     // objects and arrays, the parameters object included
constexpr uint32_t kMaxTools = 1024;
constexpr uint32_t kMaxCount = 1000000;  // largest minLength, maxLength, minItems, maxItems
constexpr uint32_t kMaxIntegerDigits = 16;
constexpr uint32_t kMaxFractionDigits = 8;

// Reads and validates the tools. Error messages name the tool, the parameter path and the keyword:
//   tool "set_timer" parameter "minutes": "pattern" is not supported
std::vector<Tool> parseTools(const json::Value& tools);
// The same from JSON text typed by a person ("tools JSON at line 3, column 7: ..." for bad JSON).
std::vector<Tool> parseTools(std::string_view toolsJson);

// Empty when `value` satisfies `schema`, else the first violation found, named by its path below the
// arguments object ("a.b[2]"; the object itself is "arguments"):
//   parameter "unit": "kelvin" is not one of the enum values
//   arguments: missing required property "city"
std::string validate(const json::Value& value, const Schema& schema);

}  // namespace needle::toolcall
