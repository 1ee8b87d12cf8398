// The value layer under json_fields.h: the rules a field carries (JsonFieldOptions, string formats), the reader
// and schema writer the codecs work on, JsonValue (how a C++ value of each supported type is written, read and
// described in a schema) and the codecs for special forms (JsonHexBytes). json_fields.h builds records on it; see
// there for the whole picture and for what a codec provides.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kfuse/core/enum_names.h"
#include "kfuse/core/json_reader.h"

namespace kfuse::core {

// ---------------------------------------------------------------------------------------------------------------
// Rules a field carries

// The form of a string: what the schema says (`pattern`, `min_length`) and what the reader checks (`valid`,
// answering `message` when it fails). Define one per form and share it.
struct JsonStringFormat {
  const char* pattern = nullptr;  // JSON Schema regular expression
  size_t min_length = 0;
  bool (*valid)(std::string_view) = nullptr;  // the same rule in C++ (null: min_length only)
  const char* message = nullptr;
};

enum JsonFieldFlag : unsigned {
  kJsonRequired = 1u << 0,       // a document without it is refused; the schema lists it as required
  kJsonOptional = 1u << 1,       // not required, in a record whose fields are required by default
  kJsonOmitDefault = 1u << 2,    // written only when it differs from the member's default value
  kJsonDiscriminator = 1u << 3,  // an enum that decides which `onlyFor` fields the record has
  kJsonNoneAsEmpty = 1u << 4,    // std::optional of an enum or string: "" when empty, instead of left out
};

struct JsonFieldOptions {
  unsigned flags = 0;
  const char* doc = nullptr;  // one line: the schema's description
  // Integers: the allowed range (default 0 to the member type's maximum, as JsonReader reads).
  std::optional<int64_t> min_integer;
  std::optional<uint64_t> max_integer;
  // Floating point: the allowed range (default any finite number).
  std::optional<double> min_number, max_number;
  // Strings.
  const JsonStringFormat* format = nullptr;
  std::span<const char* const> one_of;  // the only values allowed (empty: any)
  // Arrays (of the member itself, not of its elements).
  size_t min_items = 0;
  const char* min_items_message = nullptr;  // default "expected at least N items"
  bool unique_items = false;
  // Discriminated records: the discriminator values (bits) with this field; 0: every value.
  uint64_t only_for = 0;

  bool has(JsonFieldFlag f) const { return (flags & f) != 0; }
  // Whether a document must have it: required(), or in a record whose fields are required unless optional() or
  // omitDefault() (a field that is left out cannot be required).
  bool required(bool by_default) const {
    return has(kJsonRequired) || (by_default && !has(kJsonOptional) && !has(kJsonOmitDefault));
  }
  bool appliesTo(int discriminant) const {
    return only_for == 0 || discriminant < 0 || (only_for >> discriminant & 1) != 0;
  }
  // What the elements of an array field are checked with: the field's rules less the array's own.
  JsonFieldOptions forElements() const {
    JsonFieldOptions e = *this;
    e.min_items = 0;
    e.min_items_message = nullptr;
    e.unique_items = false;
    e.doc = nullptr;
    return e;
  }
};

// ---------------------------------------------------------------------------------------------------------------
// Reading and schema context

struct JsonReadRules {
  bool reject_unknown_fields = true;  // a field the list does not have is an error (else it is ignored)
  bool list_allowed_names = true;     // enum errors: `expected one of "a", "b", got "x"` (else `unknown value 'x'`)
};

// core::JsonReader with the rules of one kind of document.
class JsonFieldReader : public JsonReader {
 public:
  explicit JsonFieldReader(std::string source, JsonReadRules rules = {})
      : JsonReader(std::move(source)), rules_(rules) {}
  const JsonReadRules& rules() const { return rules_; }

  // `got` is none of the names in `allowed`.
  void unknownName(const std::string& path, const std::string& got, const std::vector<const char*>& allowed) {
    if (!rules_.list_allowed_names || allowed.empty()) return fail(path, "unknown value '" + got + "'");
    std::string list;
    for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + "\"" + a + "\"";
    fail(path, "expected one of " + list + ", got \"" + got + "\"");
  }

 private:
  JsonReadRules rules_;
};

// Collects the schemas written once under $defs while a document's schema is generated.
class JsonSchemaWriter {
 public:
  using OJson = nlohmann::ordered_json;

  // A reference to $defs/`name`, which `make()` writes the first time (so recursive and shared records are
  // written once, in the order they are first met).
  template <typename Make>
  OJson def(const std::string& name, Make&& make) {
    if (!defs_.contains(name)) {
      defs_[name] = OJson::object();  // claims its place before what it refers to
      defs_[name] = make();
    }
    return OJson{{"$ref", "#/$defs/" + name}};
  }
  const OJson& defs() const { return defs_; }

 private:
  OJson defs_ = OJson::object();
};

template <typename T>
struct JsonType {};

namespace json_detail {

using OJson = nlohmann::ordered_json;

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};
template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsStringMap : std::false_type {};
template <typename T>
struct IsStringMap<std::map<std::string, T>> : std::true_type {};

struct NoLeaf {
  using value_type = void;
};

// Whether values of T can be compared with == (std::vector's == compiles for any element type, so look inside).
template <typename T>
constexpr bool comparable() {
  if constexpr (IsVector<T>::value || IsOptional<T>::value) {
    return comparable<typename T::value_type>();
  } else {
    return std::equality_comparable<T>;
  }
}

template <NamedEnum E>
std::vector<const char*> namesOf() {
  std::vector<const char*> names;
  for (const EnumName<E>& e : enumNames<E>()) names.push_back(e.name);
  return names;
}

inline std::string numberText(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

inline void checkString(JsonFieldReader& r, const std::string& path, const std::string& s, const JsonFieldOptions& o) {
  if (const JsonStringFormat* f = o.format) {
    const bool ok = s.size() >= f->min_length && (!f->valid || f->valid(s));
    if (!ok) return r.fail(path, f->message ? f->message : "not of the expected form");
  }
  if (!o.one_of.empty() &&
      std::find_if(o.one_of.begin(), o.one_of.end(), [&](const char* a) { return s == a; }) == o.one_of.end()) {
    r.unknownName(path, s, std::vector<const char*>(o.one_of.begin(), o.one_of.end()));
  }
}

inline void checkNumber(JsonFieldReader& r, const std::string& path, double d, const JsonFieldOptions& o) {
  const bool low = o.min_number && d < *o.min_number, high = o.max_number && d > *o.max_number;
  if (!low && !high) return;
  if (o.min_number && o.max_number) {
    return r.fail(path, "expected a number in [" + numberText(*o.min_number) + ", " + numberText(*o.max_number) + "]");
  }
  r.fail(path, low ? "expected a number >= " + numberText(*o.min_number)
                   : "expected a number <= " + numberText(*o.max_number));
}

}  // namespace json_detail

// ---------------------------------------------------------------------------------------------------------------
// The codec of plain values and containers; `Leaf` (a codec, or NoLeaf) takes over for values of its type.

template <typename Leaf = json_detail::NoLeaf>
struct JsonValue {
  using OJson = nlohmann::ordered_json;
  [[no_unique_address]] Leaf leaf{};

  template <typename T>
  static constexpr bool kIsLeaf = std::is_same_v<T, typename Leaf::value_type>;

  template <typename T>
  void write(const T& v, nlohmann::json& out, const JsonFieldOptions& o) const {
    using namespace json_detail;
    if constexpr (kIsLeaf<T>) {
      leaf.write(v, out, o);
    } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>) {
      out = v;
    } else if constexpr (NamedEnum<T>) {
      out = enumName(v);
    } else if constexpr (std::is_integral_v<T>) {
      out = v;
    } else if constexpr (std::is_floating_point_v<T>) {
      out = std::isfinite(v) ? static_cast<double>(v) : 0.0;
    } else if constexpr (IsOptional<T>::value) {
      if (v) {
        write(*v, out, o);
      } else {
        out = "";  // only kJsonNoneAsEmpty fields are written when empty
      }
    } else if constexpr (IsVector<T>::value) {
      out = nlohmann::json::array();
      const JsonFieldOptions e = o.forElements();
      for (const auto& x : v) write(x, out.emplace_back(), e);
    } else if constexpr (IsStringMap<T>::value) {
      out = nlohmann::json::object();
      for (const auto& [k, x] : v) write(x, out[k], o);
    } else {
      static_assert(!sizeof(T), "no JSON form for this type: give the field a codec with .of()");
    }
  }

  template <typename T>
  void read(JsonFieldReader& r, const nlohmann::json& j, const std::string& path, T& v,
            const JsonFieldOptions& o) const {
    using namespace json_detail;
    if (!r.ok()) return;
    if constexpr (kIsLeaf<T>) {
      leaf.read(r, j, path, v, o);
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!j.is_boolean()) return r.fail(path, "expected true or false");
      v = j.get<bool>();
    } else if constexpr (NamedEnum<T>) {
      if (!j.is_string()) return r.fail(path, "expected a string");
      const std::string& s = j.get_ref<const std::string&>();
      if (auto e = enumFromName<T>(s)) {
        v = *e;
      } else {
        r.unknownName(path, s, namesOf<T>());
      }
    } else if constexpr (std::is_integral_v<T>) {
      const int64_t type_min = static_cast<int64_t>(std::numeric_limits<T>::min());
      const uint64_t type_max = static_cast<uint64_t>(std::numeric_limits<T>::max());
      r.integerValue(j, path, v, std::max(o.min_integer.value_or(0), type_min),
                     std::min(o.max_integer.value_or(type_max), type_max));
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!j.is_number()) return r.fail(path, "expected a number");
      const double d = j.get<double>();
      if (!std::isfinite(d)) return r.fail(path, "expected a finite number");
      checkNumber(r, path, d, o);
      if (r.ok()) v = static_cast<T>(d);
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!j.is_string()) return r.fail(path, "expected a string");
      const std::string& s = j.get_ref<const std::string&>();
      checkString(r, path, s, o);
      if (r.ok()) v = s;
    } else if constexpr (IsOptional<T>::value) {
      if (o.has(kJsonNoneAsEmpty) && j.is_string() && j.get_ref<const std::string&>().empty()) {
        v.reset();
        return;
      }
      typename T::value_type x{};
      read(r, j, path, x, o);
      if (r.ok()) v = std::move(x);
    } else if constexpr (IsVector<T>::value) {
      if (!j.is_array()) return r.fail(path, "expected an array");
      v.clear();
      v.resize(j.size());
      const JsonFieldOptions e = o.forElements();
      for (size_t i = 0; i < j.size() && r.ok(); ++i) read(r, j[i], JsonReader::indexed(path, i), v[i], e);
      if (!r.ok()) return;
      if (v.size() < o.min_items) {
        return r.fail(path, o.min_items_message ? o.min_items_message
                                                : "expected at least " + std::to_string(o.min_items) + " items");
      }
      if constexpr (comparable<typename T::value_type>()) {
        for (size_t a = 0; o.unique_items && a < v.size(); ++a) {
          for (size_t b = a + 1; b < v.size(); ++b) {
            if (v[a] == v[b]) return r.fail(JsonReader::indexed(path, b), "repeats an earlier item");
          }
        }
      }
    } else if constexpr (IsStringMap<T>::value) {
      if (!j.is_object()) return r.fail(path, "expected an object");
      v.clear();
      for (auto it = j.begin(); it != j.end() && r.ok(); ++it) {
        read(r, it.value(), JsonReader::join(path, it.key()), v[it.key()], o);
      }
    } else {
      static_assert(!sizeof(T), "no JSON form for this type: give the field a codec with .of()");
    }
  }

  template <typename T>
  OJson schema(JsonSchemaWriter& s, const JsonFieldOptions& o, JsonType<T> t) const {
    using namespace json_detail;
    if constexpr (kIsLeaf<T>) {
      return leaf.schema(s, o, t);
    } else if constexpr (std::is_same_v<T, bool>) {
      return {{"type", "boolean"}};
    } else if constexpr (NamedEnum<T>) {
      OJson names = OJson::array();
      if (o.has(kJsonNoneAsEmpty)) names.push_back("");
      for (const EnumName<T>& e : enumNames<T>()) names.push_back(e.name);
      return {{"enum", names}};
    } else if constexpr (std::is_integral_v<T>) {
      const int64_t min = std::max(o.min_integer.value_or(0), static_cast<int64_t>(std::numeric_limits<T>::min()));
      const uint64_t max = std::min(o.max_integer.value_or(std::numeric_limits<T>::max()),
                                    static_cast<uint64_t>(std::numeric_limits<T>::max()));
      OJson p = {{"type", "integer"}};
      if (min > std::numeric_limits<int64_t>::min()) p["minimum"] = min;
      if (max < static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) p["maximum"] = max;
      return p;
    } else if constexpr (std::is_floating_point_v<T>) {
      OJson p = {{"type", "number"}};
      if (o.min_number) p["minimum"] = *o.min_number;
      if (o.max_number) p["maximum"] = *o.max_number;
      return p;
    } else if constexpr (std::is_same_v<T, std::string>) {
      OJson p = {{"type", "string"}};
      if (!o.one_of.empty()) {
        p["enum"] = OJson::array();
        for (const char* a : o.one_of) p["enum"].push_back(a);
      }
      if (const JsonStringFormat* f = o.format) {
        if (f->min_length > 0) p["minLength"] = f->min_length;
        if (f->pattern) p["pattern"] = f->pattern;
      }
      return p;
    } else if constexpr (IsOptional<T>::value) {
      OJson p = schema(s, o, JsonType<typename T::value_type>{});
      if (o.has(kJsonNoneAsEmpty) && p.contains("enum") && p["enum"].front() != "") {
        p["enum"].insert(p["enum"].begin(), "");
      }
      return p;
    } else if constexpr (IsVector<T>::value) {
      OJson p = {{"type", "array"}, {"items", schema(s, o.forElements(), JsonType<typename T::value_type>{})}};
      if (o.min_items > 0) p["minItems"] = o.min_items;
      if (o.unique_items) p["uniqueItems"] = true;
      return p;
    } else if constexpr (IsStringMap<T>::value) {
      return {{"type", "object"}, {"additionalProperties", schema(s, o, JsonType<typename T::mapped_type>{})}};
    } else {
      static_assert(!sizeof(T), "no JSON form for this type: give the field a codec with .of()");
    }
  }
};

template <typename Codec>
struct IsJsonValue : std::false_type {};
template <typename Leaf>
struct IsJsonValue<JsonValue<Leaf>> : std::true_type {};

// ---------------------------------------------------------------------------------------------------------------
// Codecs for special forms

// Bytes as an even number of lowercase hex digits ("e8030000").
struct JsonHexBytes {
  using value_type = std::vector<uint8_t>;
  using OJson = nlohmann::ordered_json;

  static bool valid(std::string_view s) {
    if (s.size() % 2 != 0) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  }
  void write(const value_type& bytes, nlohmann::json& out, const JsonFieldOptions&) const {
    static const char* kDigits = "0123456789abcdef";
    std::string s;
    s.reserve(bytes.size() * 2);
    for (uint8_t b : bytes) {
      s += kDigits[b >> 4];
      s += kDigits[b & 15];
    }
    out = std::move(s);
  }
  void read(JsonFieldReader& r, const nlohmann::json& j, const std::string& path, value_type& out,
            const JsonFieldOptions&) const {
    if (!j.is_string()) return r.fail(path, "expected a string");
    const std::string& s = j.get_ref<const std::string&>();
    if (!valid(s)) return r.fail(path, "expected bytes as an even number of lowercase hex digits");
    auto digit = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    out.clear();
    for (size_t i = 0; i < s.size(); i += 2) out.push_back(static_cast<uint8_t>(digit(s[i]) << 4 | digit(s[i + 1])));
  }
  OJson schema(JsonSchemaWriter& s, const JsonFieldOptions&, JsonType<value_type>) const {
    return s.def("hex_bytes", [] {
      return OJson{{"type", "string"}, {"pattern", "^([0-9a-f]{2})*$"}, {"description", "bytes, two hex digits each"}};
    });
  }
};

}  // namespace kfuse::core
