/* cmd_version.c: autotune --version (and `autotune version`): what a bug report needs to name the
 * build: the version, the source's git commit, the NVRTC it compiles with (part of every compile
 * key), and where this binary reads its templates from. */
#include <stdio.h>
#include <string.h>

#include "../core/error.h"
#include "../core/install.h"
#include "../core/jit.h"
#include "commands.h"
#include "version.h"

static const char *USAGE =
    "usage: autotune --version (or autotune version)\n\n"
    "Prints the version, the git commit of the source, the NVRTC version (part of every compile key),\n"
    "where this binary reads its templates from, and whether it is installed.\n";

int cmd_version(int argc, char **argv) {
  if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    fputs(USAGE, stdout);
    return AT_OK;
  }
  if (argc > 1) return at_fail(AT_ERR_INPUT, "version: unexpected argument '%s' (usage: autotune --version)", argv[1]);
  printf("autotune %s\n", AT_VERSION);
  printf("commit    %s\n", AT_GIT_COMMIT);
  printf("nvrtc     %s\n", at_nvrtc_version());
  printf("templates %s\n", at_templates_dir());
  const char *data = at_install_data_dir();
  printf("installed %s\n", data ? data : "no (a build tree)");
  return AT_OK;
}
