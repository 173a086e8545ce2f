/* install.c: see install.h. The build bakes in the install layout relative to the prefix
 * (AT_INSTALL_BINDIR, AT_INSTALL_LIBDIR, AT_INSTALL_DATADIR) and the build directory
 * (AT_BUILD_ROOT); the prefix itself is never baked in, it is read back from where the code runs. */
#include "install.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef AT_INSTALL_BINDIR
#define AT_INSTALL_BINDIR "bin"
#endif
#ifndef AT_INSTALL_LIBDIR
#define AT_INSTALL_LIBDIR "lib"
#endif
#ifndef AT_INSTALL_DATADIR
#define AT_INSTALL_DATADIR "share"
#endif
#ifndef AT_BUILD_ROOT
#define AT_BUILD_ROOT ""
#endif

static char g_object[PATH_MAX], g_data[PATH_MAX];
static int g_have_data;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* The object this function is linked into: a shared library names its file in its link map; the
 * main program's entry is empty there, and /proc/self/exe names it. 1 for the main program. */
static int find_object(char *out, size_t n) {
  Dl_info info;
  struct link_map *map = NULL;
  out[0] = '\0';
  if (dladdr1((void *)find_object, &info, (void **)&map, RTLD_DL_LINKMAP) && map && map->l_name && map->l_name[0]) {
    if (!realpath(map->l_name, out)) snprintf(out, n, "%s", map->l_name);
    return 0;
  }
  ssize_t len = readlink("/proc/self/exe", out, n - 1);
  out[len > 0 ? len : 0] = '\0';
  return 1;
}

/* The number of components of a relative path ("lib/x86_64-linux-gnu": 2). */
static int depth(const char *rel) {
  int d = 0;
  for (const char *p = rel; *p;) {
    while (*p == '/') p++;
    if (!*p) break;
    d++;
    while (*p && *p != '/') p++;
  }
  return d;
}

/* 1 when path is dir or lies under it. */
static int under(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return n && strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static void find_data(void) {
  int is_exe = find_object(g_object, sizeof g_object);
  if (!g_object[0]) return;
  char build[PATH_MAX];
  if (AT_BUILD_ROOT[0] && realpath(AT_BUILD_ROOT, build) && under(g_object, build)) return; /* not installed */
  char data[PATH_MAX];
  int len;
  if (AT_INSTALL_DATADIR[0] == '/') {
    len = snprintf(data, sizeof data, "%s/autotune", AT_INSTALL_DATADIR);
  } else {
    /* prefix = the object's directory less bindir (or libdir) */
    char prefix[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s", g_object);
    const char *rel = is_exe ? AT_INSTALL_BINDIR : AT_INSTALL_LIBDIR;
    if (rel[0] == '/') return; /* installed outside its prefix: the prefix cannot be read back */
    int up = 1 + depth(rel);
    for (int i = 0; i < up; i++) {
      char *slash = strrchr(prefix, '/');
      if (!slash) return;
      *slash = '\0';
    }
    len = snprintf(data, sizeof data, "%s/%s/autotune", prefix, AT_INSTALL_DATADIR);
  }
  struct stat st;
  if (len < 0 || (size_t)len >= sizeof data || stat(data, &st) != 0 || !S_ISDIR(st.st_mode)) return;
  snprintf(g_data, sizeof g_data, "%s", data);
  g_have_data = 1;
}

const char *at_install_data_dir(void) {
  pthread_once(&g_once, find_data);
  return g_have_data ? g_data : NULL;
}

const char *at_install_object_path(void) {
  pthread_once(&g_once, find_data);
  return g_object;
}
