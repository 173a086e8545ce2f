/* commands.h: the subcommands of autotune, one file each (cmd_*.c), listed in main.c's table.
 * Each takes its own argv (argv[0] is the command name) and returns a status that main() turns
 * into the exit code: 0 ok, 1 run-time failure, 2 usage or input error. */
#ifndef AT_COMMANDS_H
#define AT_COMMANDS_H

int cmd_tune(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_warm(int argc, char **argv);
int cmd_worker(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_judge(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_expect(int argc, char **argv);

#endif
