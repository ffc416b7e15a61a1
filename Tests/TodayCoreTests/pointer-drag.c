/* pointer-drag X1 Y1 X2 Y2: a drag with the first button from (X1, Y1) to
 * (X2, Y2) on the X display in DISPLAY, through the XTest extension: what
 * a person's mouse does, for the Today view's drag-and-drop test. */
#include <X11/Xlib.h>
#include <X11/extensions/XTest.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: pointer-drag X1 Y1 X2 Y2\n"); return 2; }
    int x1 = atoi(argv[1]), y1 = atoi(argv[2]), x2 = atoi(argv[3]), y2 = atoi(argv[4]);
    Display *display = XOpenDisplay(NULL);
    if (!display) { fprintf(stderr, "pointer-drag: no display in DISPLAY\n"); return 1; }
    /* At a person's pace, so that a view slowed by a busy machine sees the
     * press, the drag begin past GTK's threshold and the motion over the
     * target before the release. */
    XTestFakeMotionEvent(display, -1, x1, y1, 0); XFlush(display); usleep(200000);
    XTestFakeButtonEvent(display, 1, True, 0); XFlush(display); usleep(300000);
    for (int step = 1; step <= 40; step++) {
        XTestFakeMotionEvent(display, -1, x1 + (x2 - x1) * step / 40, y1 + (y2 - y1) * step / 40, 0);
        XFlush(display); usleep(30000);
    }
    usleep(500000);
    XTestFakeButtonEvent(display, 1, False, 0); XFlush(display); usleep(300000);
    XCloseDisplay(display);
    return 0;
}
