/* cmd_version.c: autotune --version (and `autotune version`): what a bug report needs to name the
 * build: the version, the source's git commit, the NVRTC it compiles with (part of every compile
 * key), and where this binary reads its templates from. */
#include <stdio.h>

#include "../core/error.h"
#include "../core/install.h"
#include "../core/jit.h"
#include "commands.h"
#include "version.h"

int cmd_version(int argc, char **argv) {
  (void)argv;
  if (argc > 1) return at_fail(AT_ERR_INPUT, "usage: autotune --version");
  printf("autotune %s\n", AT_VERSION);
  printf("commit    %s\n", AT_GIT_COMMIT);
  printf("nvrtc     %s\n", at_nvrtc_version());
  printf("templates %s\n", at_templates_dir());
  const char *data = at_install_data_dir();
  printf("installed %s\n", data ? data : "no (a build tree)");
  return AT_OK;
}
