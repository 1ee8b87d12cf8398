// `kfuse help [VERB]`: the user guide's text (docs/guide.md, compiled in), whole or the section about VERB.
#include <cstdio>
#include <memory>
#include <string>

#include "verbs.h"

extern const char* const kKfuseGuideText;  // generated from docs/guide.md (cli/embed_text.cmake)

namespace kfuse::cli {

// The section of `guide` whose heading names `kfuse VERB` (a "### `kfuse ...`" heading that mentions the verb),
// up to the next heading of the same or a higher level; empty if none.
std::string guideSection(const std::string& guide, const std::string& verb) {
  size_t pos = 0;
  while ((pos = guide.find("\n#", pos)) != std::string::npos) {
    const size_t start = pos + 1;
    const size_t eol = guide.find('\n', start);
    const std::string heading = guide.substr(start, eol - start);
    const size_t level = heading.find_first_not_of('#');
    pos = eol;
    if (heading.find("`kfuse " + verb + "`") == std::string::npos) continue;
    size_t end = start;
    while ((end = guide.find("\n#", end + 1)) != std::string::npos) {
      const size_t next_level = guide.find_first_not_of('#', end + 1) - (end + 1);
      if (next_level <= level) break;
    }
    return guide.substr(start, end == std::string::npos ? std::string::npos : end + 1 - start);
  }
  return {};
}

void registerHelpVerbs(CLI::App& app, VerbContext& ctx) {
  auto verb = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("help", "Print the user guide (docs/guide.md), or its section about VERB");
  cmd->add_option("verb", *verb, "A verb (record, analyze, rewrite, validate, run, demo, export, info, ptx, ...)");
  cmd->callback([verb, &ctx] {
    const std::string guide = kKfuseGuideText;
    if (verb->empty()) {
      std::fputs(guide.c_str(), stdout);
      ctx.exit_code = kExitOk;
      return;
    }
    const std::string section = guideSection(guide, *verb);
    if (section.empty()) {
      ctx.exit_code = reportError(notFound("no verb '" + *verb + "' in the guide (kfuse --help lists the verbs)"));
      return;
    }
    std::fputs(section.c_str(), stdout);
    ctx.exit_code = kExitOk;
  });
}

}  // namespace kfuse::cli
