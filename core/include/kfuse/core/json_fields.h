// Field lists for JSON documents (plans, reports): each record's fields are listed once, with their JSON names,
// the members they hold, a one-line description and their rules, and that one list drives
//
//   - the writer, to nlohmann::json;
//   - the reader, on core::JsonReader: types, ranges, formats, enum names, required and unknown fields checked,
//     the first problem named with the file and the field's JSON path ("plan/plan.json:
//     pattern.kernels[1].module_hash: expected 64 hex digits");
//   - the JSON Schema (draft 2020-12) committed under schemas/ (a test compares it with what is generated).
//
// A record:
//
//   const auto kArgRef = core::jsonRecord<ArgRef>(
//       core::field("kernel", &ArgRef::kernel).required().range(0, 1 << 20).doc("position in the pattern"),
//       core::field("arg", &ArgRef::param).required());
//
// Members map by type: bool, integers, floating point (written as 0 when not finite), std::string, enums with a
// name table (enum_names.h), std::optional (left out when empty), std::vector (array), std::map<std::string, T>
// (object), and records, which a field names with `.of(kRecord)`; `.of(codec)` also picks a special JSON form
// (hex bytes, [x, y, z]) for the values of a member or of its containers. Besides members: `group` (a JSON object
// whose fields are members of the same record), `embed` (a member record's fields written into this object),
// `custom` (a field made from the whole record) and `computed` (a value the writer derives; readers ignore it).
// A record can check what its fields cannot say alone (`.checkedBy`), and one enum member can be its
// discriminator: fields `.onlyFor` some of its values appear only then.
//
// A codec, for a special JSON form, has `using value_type = T;` and
//   void write(const T&, nlohmann::json& out, const JsonFieldOptions&) const;
//   void read(JsonFieldReader&, const nlohmann::json&, const std::string& path, T&, const JsonFieldOptions&) const;
//   nlohmann::ordered_json schema(JsonSchemaWriter&, const JsonFieldOptions&, JsonType<T>) const;
//
// Everything is a value; field lists are cheap to build and may be built per call. Not thread-safe per reader.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kfuse/core/json_values.h"

namespace kfuse::core {

// ---------------------------------------------------------------------------------------------------------------
// Fields

// The rule setters every kind of field shares.
template <typename Self>
struct JsonFieldRules {
  JsonFieldOptions o;

  Self required() const {
    return with([](JsonFieldOptions& x) { x.flags |= kJsonRequired; });
  }
  Self optional() const {
    return with([](JsonFieldOptions& x) { x.flags |= kJsonOptional; });
  }
  Self omitDefault() const {
    return with([](JsonFieldOptions& x) { x.flags |= kJsonOmitDefault; });
  }
  Self noneAsEmpty() const {
    return with([](JsonFieldOptions& x) { x.flags |= kJsonNoneAsEmpty; });
  }
  Self discriminator() const {
    return with([](JsonFieldOptions& x) { x.flags |= kJsonDiscriminator | kJsonRequired; });
  }
  Self doc(const char* d) const {
    return with([&](JsonFieldOptions& x) { x.doc = d; });
  }
  Self range(int64_t min, uint64_t max) const {
    return with([&](JsonFieldOptions& x) {
      x.min_integer = min;
      x.max_integer = max;
    });
  }
  Self atLeast(int64_t min) const {
    return with([&](JsonFieldOptions& x) { x.min_integer = min; });
  }
  Self anyInteger() const { return atLeast(std::numeric_limits<int64_t>::min()); }
  Self numberRange(double min, double max) const {
    return with([&](JsonFieldOptions& x) {
      x.min_number = min;
      x.max_number = max;
    });
  }
  Self nonNegative() const {
    return with([](JsonFieldOptions& x) { x.min_number = 0; });
  }
  Self format(const JsonStringFormat& f) const {
    return with([&](JsonFieldOptions& x) { x.format = &f; });
  }
  Self oneOf(std::span<const char* const> values) const {
    return with([&](JsonFieldOptions& x) { x.one_of = values; });
  }
  Self minItems(size_t n, const char* message = nullptr) const {
    return with([&](JsonFieldOptions& x) {
      x.min_items = n;
      x.min_items_message = message;
    });
  }
  Self uniqueItems() const {
    return with([](JsonFieldOptions& x) { x.unique_items = true; });
  }
  // The field exists only when the record's discriminator has one of `values`.
  template <typename... E>
  Self onlyFor(E... values) const {
    return with([&](JsonFieldOptions& x) { x.only_for = ((uint64_t{1} << static_cast<int>(values)) | ...); });
  }

  const JsonFieldOptions& options() const { return o; }

 private:
  template <typename F>
  Self with(F&& f) const {
    Self s = static_cast<const Self&>(*this);
    f(s.o);
    return s;
  }
};

namespace json_detail {

inline const nlohmann::json* find(const nlohmann::json& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() ? nullptr : &*it;
}

// The member `name` of `obj` for a field with rules `o`, or null: absent (failing when required), or present
// where the discriminator does not allow it.
inline const nlohmann::json* fieldValue(JsonFieldReader& r, const nlohmann::json& obj, const std::string& path,
                                        const char* name, const JsonFieldOptions& o, bool required_by_default,
                                        int discriminant, const char* disc_text) {
  if (!r.ok()) return nullptr;
  const nlohmann::json* v = find(obj, name);
  if (!o.appliesTo(discriminant)) {
    if (v && r.rules().reject_unknown_fields)
      r.fail(JsonReader::join(path, name), std::string("not allowed when ") + disc_text);
    return nullptr;
  }
  if (!v && o.required(required_by_default)) r.fail(JsonReader::join(path, name), "missing required field");
  return v;
}

inline void describe(OJson& p, const JsonFieldOptions& o) {
  if (o.doc) p["description"] = o.doc;
}

// Adds a field's schema to its record's.
inline void addProperty(OJson& properties, OJson& required, const char* name, OJson p, const JsonFieldOptions& o,
                        bool required_by_default) {
  describe(p, o);
  properties[name] = std::move(p);
  if (o.required(required_by_default) && o.only_for == 0) required.push_back(name);
}

}  // namespace json_detail

// How a field reaches its value inside the record: a member, or a member of a member.
template <typename R, typename M>
struct JsonMemberAccess {
  M R::*member = nullptr;
  const M& get(const R& r) const { return r.*member; }
  M& get(R& r) const { return r.*member; }
};
template <typename R, typename Mid, typename M>
struct JsonNestedAccess {
  Mid R::*outer = nullptr;
  M Mid::*inner = nullptr;
  const M& get(const R& r) const { return r.*outer.*inner; }
  M& get(R& r) const { return r.*outer.*inner; }
};

// A member of record R (or a member of one of its members), written as `name`.
template <typename R, typename M, typename Codec = JsonValue<>, typename Access = JsonMemberAccess<R, M>>
struct JsonMember : JsonFieldRules<JsonMember<R, M, Codec, Access>> {
  using Record = R;
  using OJson = nlohmann::ordered_json;
  const char* name = nullptr;
  Access access{};
  Codec codec{};

  // Values of type Leaf::value_type (the member's, or its containers' elements) take their JSON form from `leaf`:
  // a record (jsonRecord) or a codec.
  template <typename Leaf>
  JsonMember<R, M, JsonValue<Leaf>, Access> of(Leaf leaf) const {
    JsonMember<R, M, JsonValue<Leaf>, Access> f;
    f.o = this->o;
    f.name = name;
    f.access = access;
    f.codec = JsonValue<Leaf>{std::move(leaf)};
    return f;
  }

  void write(const R& rec, nlohmann::json& obj, int discriminant) const {
    if (!this->o.appliesTo(discriminant)) return;
    const M& v = access.get(rec);
    if constexpr (json_detail::comparable<M>()) {  // omitDefault() on a member without == is ignored
      if (this->o.has(kJsonOmitDefault)) {
        static const R kDefaults{};
        if (v == access.get(kDefaults)) return;
      }
    }
    if constexpr (json_detail::IsOptional<M>::value) {
      if (!v && !this->o.has(kJsonNoneAsEmpty)) return;
    }
    codec.write(v, obj[name], this->o);
  }

  void read(JsonFieldReader& r, const nlohmann::json& obj, const std::string& path, R& rec, bool required_by_default,
            int discriminant, const char* disc_text) const {
    const bool by_default = required_by_default && !json_detail::IsOptional<M>::value;
    if (const nlohmann::json* v =
            json_detail::fieldValue(r, obj, path, name, this->o, by_default, discriminant, disc_text)) {
      codec.read(r, *v, JsonReader::join(path, name), access.get(rec), this->o);
    }
  }

  void schema(JsonSchemaWriter& s, OJson& properties, OJson& required, bool required_by_default) const {
    const bool by_default = required_by_default && !json_detail::IsOptional<M>::value;
    json_detail::addProperty(properties, required, name, codec.schema(s, this->o, JsonType<M>{}), this->o, by_default);
  }

  void keys(std::vector<const char*>& out) const { out.push_back(name); }

  // As a discriminator (an enum member flagged discriminator()): its value, and every value with its name.
  static constexpr bool kMayDiscriminate = NamedEnum<M>;
  int discriminant(const R& rec) const { return static_cast<int>(access.get(rec)); }
  std::vector<std::pair<int, const char*>> discriminantNames() const {
    std::vector<std::pair<int, const char*>> out;
    for (const EnumName<M>& e : enumNames<M>()) out.emplace_back(static_cast<int>(e.value), e.name);
    return out;
  }
};

// A JSON object named `name` whose fields are members of R itself (`input: {path, format}` of a report).
template <typename R, typename Rec>
struct JsonGroup : JsonFieldRules<JsonGroup<R, Rec>> {
  using Record = R;
  using OJson = nlohmann::ordered_json;
  const char* name = nullptr;
  Rec record;

  void write(const R& rec, nlohmann::json& obj, int discriminant) const {
    if (!this->o.appliesTo(discriminant)) return;
    nlohmann::json& g = obj[name];
    g = nlohmann::json::object();
    record.writeFields(rec, g);
  }
  void read(JsonFieldReader& r, const nlohmann::json& obj, const std::string& path, R& rec, bool required_by_default,
            int discriminant, const char* disc_text) const {
    if (const nlohmann::json* v =
            json_detail::fieldValue(r, obj, path, name, this->o, required_by_default, discriminant, disc_text)) {
      record.readObject(r, *v, JsonReader::join(path, name), rec);
    }
  }
  void schema(JsonSchemaWriter& s, OJson& properties, OJson& required, bool required_by_default) const {
    json_detail::addProperty(properties, required, name, record.objectSchema(s), this->o, required_by_default);
  }
  void keys(std::vector<const char*>& out) const { out.push_back(name); }
  static constexpr bool kMayDiscriminate = false;
};

// The fields of member record M, written into R's object as if they were R's own (a launch shape's grid, block
// and dynamic_shared_bytes beside a kernel's name).
template <typename R, typename M, typename Rec>
struct JsonEmbed : JsonFieldRules<JsonEmbed<R, M, Rec>> {
  using Record = R;
  using OJson = nlohmann::ordered_json;
  M R::*member = nullptr;
  Rec record;

  void write(const R& rec, nlohmann::json& obj, int discriminant) const {
    if (this->o.appliesTo(discriminant)) record.writeFields(rec.*member, obj);
  }
  void read(JsonFieldReader& r, const nlohmann::json& obj, const std::string& path, R& rec, bool /*by_default*/,
            int discriminant, const char* /*disc_text*/) const {
    if (!this->o.appliesTo(discriminant) || !r.ok()) return;
    record.readFields(r, obj, path, rec.*member, {}, /*own_object=*/false);
    if (r.ok()) record.runCheck(r, path, rec.*member);
  }
  void schema(JsonSchemaWriter& s, OJson& properties, OJson& required, bool /*by_default*/) const {
    record.schemaFields(s, properties, required);
  }
  void keys(std::vector<const char*>& out) const { record.keys(out); }
  static constexpr bool kMayDiscriminate = false;
};

// A field made from the whole record by `codec`, which has
//   void write(const R&, nlohmann::json& out) const;
//   void read(JsonFieldReader&, const nlohmann::json&, const std::string& path, R&) const;
//   nlohmann::ordered_json schema(JsonSchemaWriter&, const JsonFieldOptions&) const;
template <typename R, typename Codec>
struct JsonCustom : JsonFieldRules<JsonCustom<R, Codec>> {
  using Record = R;
  using OJson = nlohmann::ordered_json;
  const char* name = nullptr;
  Codec codec;

  void write(const R& rec, nlohmann::json& obj, int discriminant) const {
    if (this->o.appliesTo(discriminant)) codec.write(rec, obj[name]);
  }
  void read(JsonFieldReader& r, const nlohmann::json& obj, const std::string& path, R& rec, bool required_by_default,
            int discriminant, const char* disc_text) const {
    if (const nlohmann::json* v =
            json_detail::fieldValue(r, obj, path, name, this->o, required_by_default, discriminant, disc_text)) {
      codec.read(r, *v, JsonReader::join(path, name), rec);
    }
  }
  void schema(JsonSchemaWriter& s, OJson& properties, OJson& required, bool required_by_default) const {
    json_detail::addProperty(properties, required, name, codec.schema(s, this->o), this->o, required_by_default);
  }
  void keys(std::vector<const char*>& out) const { out.push_back(name); }
  static constexpr bool kMayDiscriminate = false;
};

// A value the writer derives from the record (a count, a total); the reader accepts it and ignores it.
template <typename R, typename T>
struct JsonComputed : JsonFieldRules<JsonComputed<R, T>> {
  using Record = R;
  using OJson = nlohmann::ordered_json;
  const char* name = nullptr;
  T (*compute)(const R&) = nullptr;

  void write(const R& rec, nlohmann::json& obj, int discriminant) const {
    if (this->o.appliesTo(discriminant)) JsonValue<>{}.write(compute(rec), obj[name], this->o);
  }
  void read(JsonFieldReader& r, const nlohmann::json& obj, const std::string& path, R&, bool required_by_default,
            int discriminant, const char* disc_text) const {
    (void)json_detail::fieldValue(r, obj, path, name, this->o, required_by_default, discriminant, disc_text);
  }
  void schema(JsonSchemaWriter& s, OJson& properties, OJson& required, bool required_by_default) const {
    json_detail::addProperty(properties, required, name, JsonValue<>{}.schema(s, this->o, JsonType<T>{}), this->o,
                             required_by_default);
  }
  void keys(std::vector<const char*>& out) const { out.push_back(name); }
  static constexpr bool kMayDiscriminate = false;
};

// ---------------------------------------------------------------------------------------------------------------
// Records

template <typename R, typename... Fields>
struct JsonRecord {
  using value_type = R;
  using OJson = nlohmann::ordered_json;
  using Check = void (*)(JsonFieldReader&, const std::string& path, const R&);

  const char* def_name = nullptr;  // written once under $defs and referred to, else in place
  const char* description = nullptr;
  bool required_by_default = false;
  Check check = nullptr;
  std::tuple<Fields...> fields;

  // Written once under the schema's $defs as `name`.
  JsonRecord named(const char* name) const {
    return with([&](JsonRecord& r) { r.def_name = name; });
  }
  JsonRecord doc(const char* d) const {
    return with([&](JsonRecord& r) { r.description = d; });
  }
  // Every field is required unless it says optional() (reports); else only those that say required() (plans).
  JsonRecord fieldsRequired() const {
    return with([](JsonRecord& r) { r.required_by_default = true; });
  }
  // What the fields cannot check alone, run once they were read: `check(reader, path, record)` calls
  // reader.fail() with the path of the field that is wrong.
  JsonRecord checkedBy(Check c) const {
    return with([&](JsonRecord& r) { r.check = c; });
  }

  // ---- as a codec (a member whose value is this record) ----
  void write(const R& v, nlohmann::json& out, const JsonFieldOptions&) const {
    out = nlohmann::json::object();
    writeFields(v, out);
  }
  void read(JsonFieldReader& r, const nlohmann::json& j, const std::string& path, R& v, const JsonFieldOptions&) const {
    readObject(r, j, path, v);
  }
  OJson schema(JsonSchemaWriter& s, const JsonFieldOptions&, JsonType<R>) const {
    if (!def_name) return objectSchema(s);
    return s.def(def_name, [&] { return objectSchema(s); });
  }

  // ---- the building blocks ----
  void writeFields(const R& v, nlohmann::json& obj) const {
    const int d = discriminantOf(v);
    std::apply([&](const auto&... f) { (f.write(v, obj, d), ...); }, fields);
  }

  void readObject(JsonFieldReader& r, const nlohmann::json& j, const std::string& path, R& v) const {
    if (!r.ok()) return;
    if (!j.is_object()) return r.fail(path.empty() ? "(document)" : path, "expected an object");
    readFields(r, j, path, v, {});
    if (r.ok()) runCheck(r, path, v);
  }

  // Reads the fields out of object `obj`. Keys that are no field's are refused (when the reader's rules say so),
  // except those in `also_allowed`; `own_object` false: `obj` is another record's, which checks its keys.
  void readFields(JsonFieldReader& r, const nlohmann::json& obj, const std::string& path, R& v,
                  std::initializer_list<const char*> also_allowed, bool own_object = true) const {
    int d = -1;
    std::string disc_text;
    // The discriminator first: it says which other fields there are.
    std::apply(
        [&](const auto&... f) {
          (
              [&] {
                if constexpr (std::decay_t<decltype(f)>::kMayDiscriminate) {
                  if (!isDiscriminator(f)) return;
                  f.read(r, obj, path, v, required_by_default, -1, "");
                  d = f.discriminant(v);
                  for (const auto& [value, n] : f.discriminantNames()) {
                    if (value == d) disc_text = std::string(f.name) + " is \"" + n + "\"";
                  }
                }
              }(),
              ...);
        },
        fields);
    if (!r.ok()) return;
    if (own_object && r.rules().reject_unknown_fields) {
      std::vector<const char*> known(also_allowed);
      keys(known);
      for (auto it = obj.begin(); it != obj.end(); ++it) {
        if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; })) {
          return r.fail(JsonReader::join(path, it.key()), "unknown field");
        }
      }
    }
    std::apply(
        [&](const auto&... f) {
          ((isDiscriminator(f) ? void() : f.read(r, obj, path, v, required_by_default, d, disc_text.c_str())), ...);
        },
        fields);
  }

  void runCheck(JsonFieldReader& r, const std::string& path, const R& v) const {
    if (check) check(r, path, v);
  }

  void keys(std::vector<const char*>& out) const {
    std::apply([&](const auto&... f) { (f.keys(out), ...); }, fields);
  }

  void schemaFields(JsonSchemaWriter& s, OJson& properties, OJson& required) const {
    std::apply([&](const auto&... f) { (f.schema(s, properties, required, required_by_default), ...); }, fields);
  }

  OJson objectSchema(JsonSchemaWriter& s) const {
    OJson properties = OJson::object(), required = OJson::array();
    schemaFields(s, properties, required);
    OJson o = {{"type", "object"}, {"additionalProperties", false}};
    if (!required.empty()) o["required"] = required;
    o["properties"] = properties;
    if (OJson conditions = discriminatedSchema(); !conditions.empty()) o["allOf"] = conditions;
    if (description) o["description"] = description;
    return o;
  }

  // For each set of discriminator values some fields are limited to: if the discriminator has one of them, the
  // required ones among those fields are required; else none of those fields may appear. Empty without a
  // discriminator.
  OJson discriminatedSchema() const { return discriminatedSchemaImpl(); }

 private:
  JsonRecord with(auto&& f) const {
    JsonRecord r = *this;
    f(r);
    return r;
  }

  template <typename F>
  static bool isDiscriminator(const F& f) {
    if constexpr (F::kMayDiscriminate) {
      return f.options().has(kJsonDiscriminator);
    } else {
      return false;
    }
  }

  int discriminantOf(const R& v) const {
    int d = -1;
    std::apply(
        [&](const auto&... f) {
          (
              [&] {
                if constexpr (std::decay_t<decltype(f)>::kMayDiscriminate) {
                  if (isDiscriminator(f)) d = f.discriminant(v);
                }
              }(),
              ...);
        },
        fields);
    return d;
  }

  OJson discriminatedSchemaImpl() const {
    const char* disc = nullptr;
    std::vector<std::pair<int, const char*>> values;
    std::apply(
        [&](const auto&... f) {
          (
              [&] {
                if constexpr (std::decay_t<decltype(f)>::kMayDiscriminate) {
                  if (!isDiscriminator(f)) return;
                  disc = f.name;
                  values = f.discriminantNames();
                }
              }(),
              ...);
        },
        fields);
    OJson conditions = OJson::array();
    if (!disc) return conditions;
    std::vector<uint64_t> masks;
    std::apply(
        [&](const auto&... f) {
          (
              [&] {
                const uint64_t m = f.options().only_for;
                if (m != 0 && std::find(masks.begin(), masks.end(), m) == masks.end()) masks.push_back(m);
              }(),
              ...);
        },
        fields);
    for (uint64_t m : masks) {
      OJson names = OJson::array();
      for (const auto& [value, n] : values) {
        if (m >> value & 1) names.push_back(n);
      }
      OJson required = OJson::array(), forbidden = OJson::object();
      std::apply(
          [&](const auto&... f) {
            (
                [&] {
                  if (f.options().only_for != m) return;
                  std::vector<const char*> ks;
                  f.keys(ks);
                  for (const char* k : ks) {
                    forbidden[k] = false;
                    if (f.options().required(required_by_default)) required.push_back(k);
                  }
                }(),
                ...);
          },
          fields);
      OJson when = names.size() == 1 ? OJson{{"const", names.front()}} : OJson{{"enum", names}};
      OJson c = {{"if", {{"properties", {{disc, when}}}}}};
      if (!required.empty()) c["then"] = {{"required", required}};
      c["else"] = {{"properties", forbidden}};
      conditions.push_back(c);
    }
    return conditions;
  }
};

// ---------------------------------------------------------------------------------------------------------------
// Building field lists

template <typename R, typename M>
JsonMember<R, M> field(const char* name, M R::*member) {
  JsonMember<R, M> f;
  f.name = name;
  f.access.member = member;
  return f;
}

// A member of member `outer`, written in R's object (a candidate's cost.saving_ns beside its other fields).
template <typename R, typename Mid, typename M>
JsonMember<R, M, JsonValue<>, JsonNestedAccess<R, Mid, M>> field(const char* name, Mid R::*outer, M Mid::*inner) {
  JsonMember<R, M, JsonValue<>, JsonNestedAccess<R, Mid, M>> f;
  f.name = name;
  f.access = {outer, inner};
  return f;
}

// A member written in a special form: `codec` is for M itself.
template <typename R, typename M, typename Codec>
JsonMember<R, M, Codec> field(const char* name, M R::*member, Codec codec) {
  static_assert(std::is_same_v<typename Codec::value_type, M>, "the codec is for another type");
  JsonMember<R, M, Codec> f;
  f.name = name;
  f.access.member = member;
  f.codec = std::move(codec);
  return f;
}

template <typename R, typename... Fields>
JsonRecord<R, Fields...> jsonRecord(Fields... fields) {
  static_assert((std::is_same_v<typename Fields::Record, R> && ...), "a field of another record");
  JsonRecord<R, Fields...> r;
  r.fields = std::tuple<Fields...>(std::move(fields)...);
  return r;
}

template <typename R, typename... Fields>
auto group(const char* name, Fields... fields) {
  JsonGroup<R, JsonRecord<R, Fields...>> g;
  g.name = name;
  g.record = jsonRecord<R>(std::move(fields)...);
  return g;
}

template <typename R, typename M, typename Rec>
JsonEmbed<R, M, Rec> embed(M R::*member, Rec record) {
  static_assert(std::is_same_v<typename Rec::value_type, M>, "the record describes another type");
  JsonEmbed<R, M, Rec> e;
  e.member = member;
  e.record = std::move(record);
  return e;
}

template <typename R, typename Codec>
JsonCustom<R, Codec> custom(const char* name, Codec codec) {
  JsonCustom<R, Codec> c;
  c.name = name;
  c.codec = std::move(codec);
  return c;
}

template <typename R, typename T>
JsonComputed<R, T> computed(const char* name, T (*compute)(const R&)) {
  JsonComputed<R, T> c;
  c.name = name;
  c.compute = compute;
  return c;
}

// ---------------------------------------------------------------------------------------------------------------
// Documents: a top-level record with "format" and "version" beside its fields

struct JsonDocumentInfo {
  const char* format = nullptr;  // the "format" property's value ("kfuse-plan")
  int version = 0;               // the "version" this kfuse writes
  const char* schema_id = nullptr;
  const char* title = nullptr;
  const char* description = nullptr;
};

template <typename Rec>
nlohmann::json writeJsonDocument(const JsonDocumentInfo& info, const Rec& root, const typename Rec::value_type& v) {
  nlohmann::json j = nlohmann::json::object();
  j["format"] = info.format;
  j["version"] = info.version;
  root.writeFields(v, j);
  return j;
}

// Reads the root record's fields; "format" and "version" are left to the caller, which checks them first.
template <typename Rec>
void readJsonDocument(JsonFieldReader& r, const nlohmann::json& j, const Rec& root, typename Rec::value_type& v) {
  if (!r.ok()) return;
  if (!j.is_object()) return r.fail("(document)", "expected an object");
  root.readFields(r, j, "", v, {"format", "version"});
  if (r.ok()) root.runCheck(r, "", v);
}

// The document's JSON Schema, pretty-printed with a final newline.
template <typename Rec>
std::string jsonDocumentSchema(const JsonDocumentInfo& info, const Rec& root) {
  using OJson = nlohmann::ordered_json;
  JsonSchemaWriter s;
  OJson properties = {{"format", {{"const", info.format}}}, {"version", {{"const", info.version}}}};
  OJson required = OJson::array({"format", "version"});
  root.schemaFields(s, properties, required);
  const OJson conditions = root.discriminatedSchema();
  OJson schema = {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
                  {"$id", info.schema_id},
                  {"title", info.title},
                  {"description", info.description},
                  {"type", "object"},
                  {"additionalProperties", false},
                  {"required", required},
                  {"properties", properties}};
  if (!conditions.empty()) schema["allOf"] = conditions;
  if (!s.defs().empty()) schema["$defs"] = s.defs();
  return schema.dump(2) + "\n";
}

}  // namespace kfuse::core
