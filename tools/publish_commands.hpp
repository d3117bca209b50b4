// The subcommands of epbroker-publish. Each returns the process exit status:
// 0 success, 1 failure (message on stderr), 2 usage error.
#pragma once

#include "tools/cli.hpp"

namespace catalog::tools {

int cmd_init(const Args& args);
int cmd_pack(const Args& args);
int cmd_pack_model(const Args& args);
int cmd_add(const Args& args);
int cmd_add_model(const Args& args);
int cmd_remove(const Args& args);
int cmd_timestamp(const Args& args);
int cmd_rotate(const Args& args);
int cmd_delegate(const Args& args);
int cmd_verify(const Args& args);
int cmd_sign(const Args& args);

}  // namespace catalog::tools
