/* main.c: the command table and the only place that turns a status into an exit code.
 *
 *   autotune [options] SPACE.yaml     tune (the default command)
 *   autotune COMMAND [options] ...    any command of the table below */
#include <stdio.h>
#include <string.h>

#include "../core/error.h"
#include "commands.h"

typedef struct command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary; /* NULL: internal, not listed */
} command;

static const command COMMANDS[] = {
    {"tune", cmd_tune, "tune a search space: compile, check and time every candidate (the default)"},
    {"list", cmd_list, "list a space's surviving candidates, pruning counts and shapes, compiling nothing"},
    {"devices", cmd_devices, "list the GPUs autotune can see"},
    {"export", cmd_export, "write the tuned configs as JSON files, bucketed by M"},
    {"model", cmd_model, "fit the time model that picks configs for the (N, K) nobody tuned, from a menu run"},
    {"query", cmd_query, "show the config chosen for a problem, and where it came from"},
    {"warm", cmd_warm, "fill the compile cache, no GPU needed, with the kernels the runtime would launch for given weights"},
    {"compare", cmd_compare, "time providers side by side: the tuned kernels, the built-in config, cuBLASLt, cuBLAS, files"},
    {"judge", cmd_judge, "decide tuned shapes' winners again on their times as the runtime launches them (tail included)"},
    {"report", cmd_report, "print a DB's results per shape and variant (tables, --csv, --plot SVG), no GPU needed"},
    {"expect", cmd_expect, "record the tuned configs' TFLOP/s, or check them again (exit 1 on a regression)"},
    {"merge", cmd_merge, "combine tuning DBs (the shards of a space, one device model) into one"},
    {"version", cmd_version, "print the version, git commit and NVRTC version (also --version)"},
    {"worker", cmd_worker, NULL},
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: autotune [options] SPACE.yaml\n"
          "       autotune COMMAND [options]\n\n"
          "commands:\n");
  for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
    if (COMMANDS[i].summary) fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
  fprintf(f, "\n'autotune COMMAND --help' describes a command; 'autotune tune --help' lists the tuning options.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return AT_ERR_INPUT;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return AT_OK;
  }
  if (strcmp(argv[1], "--version") == 0) argv[1] = "version";
  int rc = -1;
  for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
    if (strcmp(argv[1], COMMANDS[i].name) == 0) rc = COMMANDS[i].run(argc - 1, argv + 1);
  if (rc == -1) rc = cmd_tune(argc, argv); /* autotune [options] SPACE.yaml */
  if (rc != AT_OK) {
    const char *msg = at_errmsg();
    if (msg[0]) fprintf(stderr, "autotune: %s\n", msg);
  }
  return rc;
}
