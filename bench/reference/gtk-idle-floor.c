/* gtk-idle-floor: what a GTK 3 program that shows a notification holds in
 * memory while it waits, the floor the banners' idle memory is measured
 * against.
 *
 *   gtk-idle-floor
 *
 * On the X display (DISPLAY): one undecorated window of the notification
 * type, 380 pixels wide, kept above, never focused, at the top-right
 * corner, with a summary and a wrapping body, as a banner has; no D-Bus,
 * no icons, no pictures. Prints "shown" once the window is mapped, then
 * idles until killed. Cairo draws, as in the banners (GDK_GL=disable). */
#include <gtk/gtk.h>
#include <stdio.h>
#include <stdlib.h>

static gboolean say_shown(GtkWidget *window, GdkEvent *event, gpointer data) {
    (void)window;
    (void)event;
    (void)data;
    printf("shown\n");
    fflush(stdout);
    return FALSE;
}

int main(int argc, char **argv) {
    setenv("GDK_GL", "disable", 0);
    gtk_init(&argc, &argv);
    GtkWidget *window = gtk_window_new(GTK_WINDOW_TOPLEVEL);
    gtk_window_set_type_hint(GTK_WINDOW(window), GDK_WINDOW_TYPE_HINT_NOTIFICATION);
    gtk_window_set_decorated(GTK_WINDOW(window), FALSE);
    gtk_window_set_accept_focus(GTK_WINDOW(window), FALSE);
    gtk_window_set_keep_above(GTK_WINDOW(window), TRUE);
    gtk_window_set_default_size(GTK_WINDOW(window), 380, -1);
    GdkRectangle area = {0, 0, 1024, 768};
    GdkMonitor *monitor = gdk_display_get_primary_monitor(gdk_display_get_default());
    if (monitor)
        gdk_monitor_get_workarea(monitor, &area);
    gtk_window_move(GTK_WINDOW(window), area.x + area.width - 392, area.y + 12);
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
    GtkWidget *summary = gtk_label_new("Round 1");
    GtkWidget *body = gtk_label_new("The banner of this round");
    gtk_label_set_line_wrap(GTK_LABEL(body), TRUE);
    gtk_label_set_width_chars(GTK_LABEL(body), 24);
    gtk_container_add(GTK_CONTAINER(box), summary);
    gtk_container_add(GTK_CONTAINER(box), body);
    gtk_container_add(GTK_CONTAINER(window), box);
    g_signal_connect(window, "map-event", G_CALLBACK(say_shown), NULL);
    gtk_widget_show_all(window);
    gtk_main();
    return 0;
}
