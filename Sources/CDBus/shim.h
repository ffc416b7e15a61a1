#ifndef TODAY_CDBUS_SHIM_H
#define TODAY_CDBUS_SHIM_H
#include <dbus/dbus.h>
#include <sys/eventfd.h>
#endif
