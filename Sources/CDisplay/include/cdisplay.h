#ifndef TODAY_CDISPLAY_H
#define TODAY_CDISPLAY_H
/* What today-banners asks the display server and GTK 3 does not say:
 * whether the user is away, and an output's name. For today-banners only:
 * it links GDK, libwayland-client, libX11 and libXext.
 *
 * Whether the user is away: no input for a while. On Wayland through the
 * compositor's idle protocol (ext-idle-notify-v1, or org_kde_kwin_idle
 * where that is all there is, as in sway 1.7), under X11 through the SYNC
 * extension's IDLETIME counter, looked at once a second. */

#include <gdk/gdk.h>

/* Called with 1 once the user has given no input for the watch's time,
 * with 0 when input comes again; on GTK's main loop. */
typedef void (*today_idle_changed)(int idle, void *data);

typedef struct today_idle today_idle;

/* Starts watching GDK's default display for `seconds` without input.
 * NULL where that display cannot say (a compositor with neither idle
 * protocol, an X server without SYNC). Under X11 the first look is at
 * once, and a user away already is reported before this returns; on
 * Wayland the compositor counts the seconds from the watch's start (the
 * protocols say nothing of the time before). */
today_idle *today_idle_watch(unsigned seconds, today_idle_changed changed, void *data);

/* Stops the watch and frees it. */
void today_idle_stop(today_idle *watch);

/* Which way the watch learns of input: "ext-idle-notify-v1",
 * "org_kde_kwin_idle" or "x11-sync". */

/* Whether the watch knows of input before its start (X11), rather than
 * counting from it (Wayland). */
int today_idle_knows_the_past(const today_idle *watch);
const char *today_idle_source(const today_idle *watch);

/* The name of `monitor`'s output, as the compositor or RandR calls it
 * (DP-1, HDMI-A-1; the name swaymsg -t get_outputs and xrandr show), in a
 * string to free with g_free; NULL where it has none. On Wayland through
 * xdg-output (GTK 3 gives only the make and model there), under X11
 * GDK's model, which is RandR's name. */
char *today_monitor_name(GdkMonitor *monitor);

#endif
