#ifndef TODAY_CGTK_SHIM_H
#define TODAY_CGTK_SHIM_H
#include <gtk/gtk.h>
#include <gtk-layer-shell.h>
#endif
