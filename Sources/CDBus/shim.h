#ifndef TODAY_CDBUS_SHIM_H
#define TODAY_CDBUS_SHIM_H
#include <dbus/dbus.h>
#include <spawn.h>
#include <sys/eventfd.h>

/* glibc 2.34: the child closes every descriptor from `lowest` up before it
 * executes. spawn.h declares it only under _GNU_SOURCE; the private bus
 * daemon is started with it so that it keeps none of its parent's files. */
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int lowest);
#endif
