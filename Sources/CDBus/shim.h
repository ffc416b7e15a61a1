#ifndef TODAY_CDBUS_SHIM_H
#define TODAY_CDBUS_SHIM_H
#include <dbus/dbus.h>
#include <sys/eventfd.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#endif
