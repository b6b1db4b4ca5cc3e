// SPDX-License-Identifier: BSD-3-Clause
// The op table's text forms (the rule of each argument, the JSON Python reads) and rows built by name.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/augment/ops.h"
#include "core/errors.h"

namespace spdl_torch::core::augment {
namespace {

// A bound as the docs print it: 255, -0.5, 16777216.
std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", v);
  return text;
}

std::string quoted(const char* text) {
  std::string out = "\"";
  for (const char* p = text; *p != 0; ++p) {
    if (*p == '"' || *p == '\\') out += '\\';
    out += *p;
  }
  return out + "\"";
}

std::string bound(double v) { return std::isinf(v) ? "null" : number(v); }

std::string args_json(const Arg* args, int num_args) {
  std::string out = "[";
  for (int k = 0; k < num_args; ++k) {
    const Arg& a = args[k];
    static const char* kinds[] = {"real", "integer", "choice"};
    std::string choices = "[";
    for (int c = 0; c < a.num_choices(); ++c) choices += (c ? ", " : "") + quoted(a.choices[c]);
    out += std::string(k ? ", " : "") + "{\"name\": " + quoted(a.name) + ", \"kind\": \"" + kinds[int(a.kind)] +
           "\", \"count\": " + std::to_string(a.count) + ", \"low\": " + bound(a.low) + ", \"high\": " + bound(a.high) +
           ", \"low_open\": " + (a.low_open ? "true" : "false") +
           ", \"high_open\": " + (a.high_open ? "true" : "false") + ", \"finite\": " + (a.infinite ? "false" : "true") +
           ", \"odd\": " + (a.odd ? "true" : "false") + ", \"choices\": " + choices +
           "], \"none\": " + (a.has_none ? number(a.none_value) : "null") +
           ", \"default\": " + (a.has_default ? number(a.default_value) : "null") + ", \"doc\": " + quoted(a.doc) +
           ", \"rule\": " + quoted(arg_rule(a).c_str()) + "}";
  }
  return out + "]";
}

int arg_index(const OpSpec& op, const char* name) {
  for (int k = 0; k < op.num_args; ++k) {
    if (same_name(op.args[k].name, name)) return k;
  }
  throw InvalidArgument(std::string(op.name) + " has no argument '" + name + "'");
}

int first_column(const OpSpec& op, int arg) {
  int column = 1;
  for (int k = 0; k < arg; ++k) column += op.args[k].count;
  return column;
}

}  // namespace

std::string arg_rule(const Arg& a) {
  if (a.kind == ArgKind::Choice) {
    std::string out;
    const int n = a.num_choices();
    for (int c = 0; c < n; ++c) {
      out += (c == 0 ? "" : c == n - 1 ? " or " : ", ") + std::to_string(c) + " (" + a.choices[c] + ")";
    }
    return out;
  }
  if (a.kind == ArgKind::Integer) {
    return std::string(a.odd ? "an odd integer" : "an integer") + " in [" + number(a.low) + ", " + number(a.high) + "]";
  }
  std::string out;
  if (!std::isinf(a.low) && !std::isinf(a.high)) {
    out = std::string("a number in ") + (a.low_open ? "(" : "[") + number(a.low) + ", " + number(a.high) +
          (a.high_open ? ")" : "]");
  } else if (!std::isinf(a.low)) {
    out = std::string("a finite number ") + (a.low_open ? "> " : ">= ") + number(a.low);
  } else if (!std::isinf(a.high)) {
    out = std::string("a finite number ") + (a.high_open ? "< " : "<= ") + number(a.high);
  } else {
    out = a.infinite ? "a number (not NaN)" : "a finite number";
  }
  return a.has_none ? out + ", or " + number(a.none_value) + " for None" : out;
}

std::string op_table_json() {
  std::string out = "{\"columns\": " + std::to_string(kColumns) +
                    ", \"erase_columns\": " + std::to_string(kEraseColumns) + ", \"ops\": [";
  for (int i = 0; i < kNumOps; ++i) {
    const OpSpec& op = kOps[i];
    out += std::string(i ? ", " : "") + "{\"code\": " + std::to_string(op.code) + ", \"name\": " + quoted(op.name) +
           ", \"doc\": " + quoted(op.doc) + ", \"args\": " + args_json(op.args, op.num_args) + "}";
  }
  return out + "], \"erase\": " + args_json(kEraseArgs, kNumEraseArgs) + "}";
}

Row::Row(const char* op) : op_(nullptr) {
  for (const OpSpec& spec : kOps) {
    if (same_name(spec.name, op)) op_ = &spec;
  }
  if (op_ == nullptr) throw InvalidArgument(std::string("no augment op named '") + op + "'");
  columns_[0] = float(op_->code);
}

Row& Row::set(const char* arg, std::initializer_list<float> values) {
  const int k = arg_index(*op_, arg);
  if (int(values.size()) != op_->args[k].count) {
    throw InvalidArgument(std::string(op_->name) + " " + arg + ": expected " + std::to_string(op_->args[k].count) +
                          " values, got " + std::to_string(values.size()));
  }
  int column = first_column(*op_, k);
  for (float v : values) columns_[column++] = v;
  given_[k] = true;
  return *this;
}

Row& Row::set(const char* arg, const char* choice) {
  const int c = choice_index(op_->args, op_->num_args, arg, choice);
  if (c < 0) throw InvalidArgument(std::string(op_->name) + " " + arg + ": no choice '" + choice + "'");
  return set(arg, float(c));
}

std::vector<float> Row::values() const {
  std::vector<float> out(columns_, columns_ + kColumns);
  for (int k = 0; k < op_->num_args; ++k) {
    const Arg& a = op_->args[k];
    if (given_[k]) continue;
    if (!a.has_default) throw InvalidArgument(std::string(op_->name) + ": missing argument '" + a.name + "'");
    for (int c = 0, column = first_column(*op_, k); c < a.count; ++c) out[size_t(column + c)] = float(a.default_value);
  }
  return out;
}

}  // namespace spdl_torch::core::augment
