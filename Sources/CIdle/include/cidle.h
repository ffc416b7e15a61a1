#ifndef TODAY_CIDLE_H
#define TODAY_CIDLE_H
/* Whether the user is away: no input for a while, as the display server
 * tells it. On Wayland through the compositor's idle protocol
 * (ext-idle-notify-v1, or org_kde_kwin_idle where that is all there is,
 * as in sway 1.7), under X11 through the SYNC extension's IDLETIME
 * counter, looked at once a second. For today-banners only: it links GDK,
 * libwayland-client and libX11. */

/* Called with 1 once the user has given no input for the watch's time,
 * with 0 when input comes again; on GTK's main loop. */
typedef void (*today_idle_changed)(int idle, void *data);

typedef struct today_idle today_idle;

/* Starts watching GDK's default display for `seconds` without input.
 * NULL where that display cannot say (a compositor with neither idle
 * protocol, an X server without SYNC). */
today_idle *today_idle_watch(unsigned seconds, today_idle_changed changed, void *data);

/* Stops the watch and frees it. */
void today_idle_stop(today_idle *watch);

/* Which way the watch learns of input: "ext-idle-notify-v1",
 * "org_kde_kwin_idle" or "x11-sync". */
const char *today_idle_source(const today_idle *watch);

#endif
