#include "codegen/config_env.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"

namespace fp4jit::codegen {

void override_from_env(const char* variable, std::initializer_list<ConfigField> fields,
                       const std::function<void()>& validate) {
  const char* env = std::getenv(variable);
  if (env == nullptr || *env == '\0') return;
  const std::string text(env);
  const auto bad = [&](const std::string& why) {
    fail(ErrorKind::invalid_argument, "{}='{}': {}", variable, text, why);
  };
  std::string names;
  for (const ConfigField& f : fields)
    names += (names.empty() ? "" : ", ") + std::string(f.name) + (f.second ? "=AxB" : "=N");
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    const std::size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    const ConfigField* field = nullptr;
    for (const ConfigField& f : fields)
      if (f.name == key) field = &f;
    if (field == nullptr) bad("unknown field '" + item + "' (" + names + ")");
    int a = 0, b = 0;
    char tail = 0;
    if (field->second != nullptr) {
      if (std::sscanf(value.c_str(), "%dx%d%c", &a, &b, &tail) != 2)
        bad("expected " + key + "=AxB");
      *field->value = a;
      *field->second = b;
    } else {
      if (std::sscanf(value.c_str(), "%d%c", &a, &tail) != 1) bad("expected " + key + "=N");
      *field->value = a;
    }
    at = end + 1;
  }
  try {
    validate();
  } catch (const Error& e) {
    bad(e.what());
  }
}

}  // namespace fp4jit::codegen
