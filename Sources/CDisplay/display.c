#include "cdisplay.h"

#include <gdk/gdk.h>
#include <gdk/gdkwayland.h>
#include <gdk/gdkx.h>
#include <stdlib.h>
#include <string.h>
#include <wayland-client.h>
#include <X11/extensions/sync.h>

/* The two idle protocols' interfaces, as their XML declares them
 * (wayland-protocols' staging/ext-idle-notify, and KDE's idle.xml):
 * only what the watch calls and hears. */
extern const struct wl_interface ext_idle_notification_v1_interface;
extern const struct wl_interface org_kde_kwin_idle_timeout_interface;

static const struct wl_interface *ext_get_types[] = {&ext_idle_notification_v1_interface, NULL, &wl_seat_interface};
static const struct wl_interface *kde_get_types[] = {&org_kde_kwin_idle_timeout_interface, &wl_seat_interface, NULL};
static const struct wl_interface *no_types[] = {NULL, NULL, NULL};

static const struct wl_message ext_notifier_requests[] = {{"destroy", "", no_types}, {"get_idle_notification", "nuo", ext_get_types}};
const struct wl_interface ext_idle_notifier_v1_interface = {"ext_idle_notifier_v1", 1, 2, ext_notifier_requests, 0, NULL};
static const struct wl_message ext_notification_requests[] = {{"destroy", "", no_types}};
static const struct wl_message ext_notification_events[] = {{"idled", "", no_types}, {"resumed", "", no_types}};
const struct wl_interface ext_idle_notification_v1_interface = {"ext_idle_notification_v1", 1, 1, ext_notification_requests, 2, ext_notification_events};

static const struct wl_message kde_idle_requests[] = {{"get_idle_timeout", "nou", kde_get_types}};
const struct wl_interface org_kde_kwin_idle_interface = {"org_kde_kwin_idle", 1, 1, kde_idle_requests, 0, NULL};
static const struct wl_message kde_timeout_requests[] = {{"release", "", no_types}, {"simulate_user_activity", "", no_types}};
static const struct wl_message kde_timeout_events[] = {{"idle", "", no_types}, {"resumed", "", no_types}};
const struct wl_interface org_kde_kwin_idle_timeout_interface = {"org_kde_kwin_idle_timeout", 1, 2, kde_timeout_requests, 2, kde_timeout_events};

struct today_idle {
    today_idle_changed changed;
    void *data;
    int idle;
    const char *source;
    /* Wayland */
    struct wl_proxy *manager, *notification;
    int is_ext;
    /* X11 */
    Display *x;
    XSyncCounter counter;
    guint poll;
    gint64 threshold_ms;
};

static void report(today_idle *watch, int idle) {
    if (idle == watch->idle) return;
    watch->idle = idle;
    watch->changed(idle, watch->data);
}

/* Both protocols' notification objects have the same two events: away, back. */
static void on_idle(void *data, struct wl_proxy *proxy) {
    (void)proxy;
    report(data, 1);
}
static void on_resumed(void *data, struct wl_proxy *proxy) {
    (void)proxy;
    report(data, 0);
}
static const struct {
    void (*idle)(void *, struct wl_proxy *);
    void (*resumed)(void *, struct wl_proxy *);
} notification_listener = {on_idle, on_resumed};

struct globals {
    struct wl_registry *registry;
    uint32_t ext, kde;
};
static void on_global(void *data, struct wl_registry *registry, uint32_t name, const char *interface, uint32_t version) {
    (void)registry;
    (void)version;
    struct globals *found = data;
    if (strcmp(interface, ext_idle_notifier_v1_interface.name) == 0) found->ext = name;
    if (strcmp(interface, org_kde_kwin_idle_interface.name) == 0) found->kde = name;
}
static void on_global_remove(void *data, struct wl_registry *registry, uint32_t name) {
    (void)data;
    (void)registry;
    (void)name;
}
static const struct wl_registry_listener registry_listener = {on_global, on_global_remove};

static int watch_wayland(today_idle *watch, GdkDisplay *display, unsigned seconds) {
    struct wl_display *wayland = gdk_wayland_display_get_wl_display(display);
    GdkSeat *seat = gdk_display_get_default_seat(display);
    struct wl_seat *wl_seat = seat ? gdk_wayland_seat_get_wl_seat(seat) : NULL;
    if (!wayland || !wl_seat) return 0;
    /* The globals are listed on a queue of the watch's own, so that the
     * round trip dispatches nothing of GDK's. */
    struct wl_event_queue *queue = wl_display_create_queue(wayland);
    if (!queue) return 0;
    struct globals found = {NULL, 0, 0};
    found.registry = wl_display_get_registry(wayland);
    wl_proxy_set_queue((struct wl_proxy *)found.registry, queue);
    wl_registry_add_listener(found.registry, &registry_listener, &found);
    wl_display_roundtrip_queue(wayland, queue);
    if (found.ext || found.kde) {
        watch->is_ext = found.ext != 0;
        const struct wl_interface *interface = watch->is_ext ? &ext_idle_notifier_v1_interface : &org_kde_kwin_idle_interface;
        watch->manager = wl_registry_bind(found.registry, watch->is_ext ? found.ext : found.kde, interface, 1);
        /* Its events (and its notification's) are GDK's to dispatch. */
        wl_proxy_set_queue(watch->manager, NULL);
        uint32_t timeout = seconds > UINT32_MAX / 1000 ? UINT32_MAX : seconds * 1000;
        if (watch->is_ext)
            watch->notification = wl_proxy_marshal_constructor(watch->manager, 1, &ext_idle_notification_v1_interface, NULL, timeout, wl_seat);
        else
            watch->notification = wl_proxy_marshal_constructor(watch->manager, 0, &org_kde_kwin_idle_timeout_interface, NULL, wl_seat, timeout);
        if (watch->notification) {
            wl_proxy_add_listener(watch->notification, (void (**)(void))&notification_listener, watch);
            watch->source = watch->is_ext ? "ext-idle-notify-v1" : "org_kde_kwin_idle";
            wl_display_flush(wayland);
        }
    }
    wl_registry_destroy(found.registry);
    wl_event_queue_destroy(queue);
    return watch->notification != NULL;
}

static gboolean look(gpointer data) {
    today_idle *watch = data;
    XSyncValue value;
    if (XSyncQueryCounter(watch->x, watch->counter, &value)) {
        gint64 idle = ((gint64)XSyncValueHigh32(value) << 32) | (guint32)XSyncValueLow32(value);
        report(watch, idle >= watch->threshold_ms);
    }
    return G_SOURCE_CONTINUE;
}

static int watch_x11(today_idle *watch, GdkDisplay *display, unsigned seconds) {
    Display *x = gdk_x11_display_get_xdisplay(display);
    int event_base, error_base, major, minor, count = 0;
    if (!x || !XSyncQueryExtension(x, &event_base, &error_base) || !XSyncInitialize(x, &major, &minor)) return 0;
    XSyncSystemCounter *counters = XSyncListSystemCounters(x, &count);
    for (int i = 0; counters && i < count; i++) {
        if (strcmp(counters[i].name, "IDLETIME") == 0) {
            watch->counter = counters[i].counter;
            watch->x = x;
        }
    }
    if (counters) XSyncFreeSystemCounterList(counters);
    if (!watch->x) return 0;
    watch->threshold_ms = (gint64)seconds * 1000;
    watch->source = "x11-sync";
    watch->poll = g_timeout_add_seconds(1, look, watch);
    /* The counter says how long the user has been away already: a banner
     * that starts the program while they are away waits from the first. */
    look(watch);
    return 1;
}

today_idle *today_idle_watch(unsigned seconds, today_idle_changed changed, void *data) {
    GdkDisplay *display = gdk_display_get_default();
    if (!display || seconds == 0) return NULL;
    today_idle *watch = calloc(1, sizeof *watch);
    if (!watch) return NULL;
    watch->changed = changed;
    watch->data = data;
    int watching = 0;
    if (GDK_IS_WAYLAND_DISPLAY(display)) watching = watch_wayland(watch, display, seconds);
    else if (GDK_IS_X11_DISPLAY(display)) watching = watch_x11(watch, display, seconds);
    if (!watching) {
        if (watch->manager) wl_proxy_destroy(watch->manager);
        free(watch);
        return NULL;
    }
    return watch;
}

void today_idle_stop(today_idle *watch) {
    if (!watch) return;
    if (watch->notification) {
        /* destroy (ext) and release (kde) are both request 0. */
        wl_proxy_marshal(watch->notification, 0);
        wl_proxy_destroy(watch->notification);
    }
    if (watch->manager) {
        if (watch->is_ext) wl_proxy_marshal(watch->manager, 0);
        wl_proxy_destroy(watch->manager);
    }
    if (watch->poll) g_source_remove(watch->poll);
    free(watch);
}

const char *today_idle_source(const today_idle *watch) { return watch ? watch->source : ""; }

/* xdg-output (wayland-protocols' unstable/xdg-output, version 2 for the
 * name): only what the name's lookup calls and hears. */
extern const struct wl_interface zxdg_output_v1_interface;
static const struct wl_interface *xdg_get_types[] = {&zxdg_output_v1_interface, &wl_output_interface};
static const struct wl_message xdg_manager_requests[] = {{"destroy", "", no_types}, {"get_xdg_output", "no", xdg_get_types}};
const struct wl_interface zxdg_output_manager_v1_interface = {"zxdg_output_manager_v1", 2, 2, xdg_manager_requests, 0, NULL};
static const struct wl_message xdg_output_requests[] = {{"destroy", "", no_types}};
static const struct wl_message xdg_output_events[] = {
    {"logical_position", "ii", no_types}, {"logical_size", "ii", no_types}, {"done", "", no_types}, {"name", "2s", no_types}, {"description", "2s", no_types}};
const struct wl_interface zxdg_output_v1_interface = {"zxdg_output_v1", 2, 1, xdg_output_requests, 5, xdg_output_events};

static void xdg_ignore_pair(void *data, struct wl_proxy *proxy, int32_t a, int32_t b) {
    (void)data;
    (void)proxy;
    (void)a;
    (void)b;
}
static void xdg_ignore(void *data, struct wl_proxy *proxy) {
    (void)data;
    (void)proxy;
}
static void xdg_name(void *data, struct wl_proxy *proxy, const char *name) {
    (void)proxy;
    char **found = data;
    if (!*found && name) *found = g_strdup(name);
}
static void xdg_ignore_text(void *data, struct wl_proxy *proxy, const char *text) {
    (void)data;
    (void)proxy;
    (void)text;
}
static const struct {
    void (*logical_position)(void *, struct wl_proxy *, int32_t, int32_t);
    void (*logical_size)(void *, struct wl_proxy *, int32_t, int32_t);
    void (*done)(void *, struct wl_proxy *);
    void (*name)(void *, struct wl_proxy *, const char *);
    void (*description)(void *, struct wl_proxy *, const char *);
} xdg_output_listener = {xdg_ignore_pair, xdg_ignore_pair, xdg_ignore, xdg_name, xdg_ignore_text};

struct xdg_global {
    uint32_t name, version;
};
static void on_xdg_global(void *data, struct wl_registry *registry, uint32_t name, const char *interface, uint32_t version) {
    (void)registry;
    struct xdg_global *found = data;
    if (strcmp(interface, zxdg_output_manager_v1_interface.name) == 0) {
        found->name = name;
        found->version = version;
    }
}
static const struct wl_registry_listener xdg_registry_listener = {on_xdg_global, on_global_remove};

static char *wayland_monitor_name(GdkDisplay *display, GdkMonitor *monitor) {
    struct wl_display *wayland = gdk_wayland_display_get_wl_display(display);
    struct wl_output *output = gdk_wayland_monitor_get_wl_output(monitor);
    if (!wayland || !output) return NULL;
    /* Everything on a queue of the lookup's own: two round trips that
     * dispatch nothing of GDK's. */
    struct wl_event_queue *queue = wl_display_create_queue(wayland);
    if (!queue) return NULL;
    struct wl_proxy *wrapped = wl_proxy_create_wrapper(output);
    wl_proxy_set_queue(wrapped, queue);
    struct xdg_global found = {0, 0};
    struct wl_registry *registry = wl_display_get_registry(wayland);
    wl_proxy_set_queue((struct wl_proxy *)registry, queue);
    wl_registry_add_listener(registry, &xdg_registry_listener, &found);
    wl_display_roundtrip_queue(wayland, queue);
    char *name = NULL;
    if (found.name && found.version >= 2) {
        struct wl_proxy *manager = wl_registry_bind(registry, found.name, &zxdg_output_manager_v1_interface, 2);
        struct wl_proxy *xdg = wl_proxy_marshal_constructor(manager, 1, &zxdg_output_v1_interface, NULL, wrapped);
        if (xdg) {
            wl_proxy_add_listener(xdg, (void (**)(void))&xdg_output_listener, &name);
            wl_display_roundtrip_queue(wayland, queue);
            wl_proxy_marshal(xdg, 0);
            wl_proxy_destroy(xdg);
        }
        wl_proxy_marshal(manager, 0);
        wl_proxy_destroy(manager);
    }
    wl_registry_destroy(registry);
    wl_proxy_wrapper_destroy(wrapped);
    wl_display_flush(wayland);
    wl_event_queue_destroy(queue);
    return name;
}

char *today_monitor_name(GdkMonitor *monitor) {
    if (!monitor) return NULL;
    GdkDisplay *display = gdk_monitor_get_display(monitor);
    if (GDK_IS_WAYLAND_DISPLAY(display)) return wayland_monitor_name(display, monitor);
    const char *model = gdk_monitor_get_model(monitor);
    return model ? g_strdup(model) : NULL;
}

int today_idle_knows_the_past(const today_idle *watch) { return watch && watch->x != NULL; }
