/* install.h: where the data an installed autotune reads (templates, search spaces) lies, found from
 * the path of the binary or library that is running, so that an installed prefix can be moved. */
#ifndef AT_INSTALL_H
#define AT_INSTALL_H

/* "<prefix>/<datadir>/autotune" of the installation the running code belongs to: the autotune
 * executable (prefix = its directory less bindir) or libautotune (its directory less libdir).
 * NULL for a build that is not installed (the code lives under the build directory), or when the
 * directory does not exist. Computed once; not malloc'd. */
const char *at_install_data_dir(void);

/* The file the running code was loaded from (the executable or libautotune), or "". */
const char *at_install_object_path(void);

#endif
